"""`cq view` in a real browser: headless Chromium (Debian's chromium and chromium-driver) driven by Selenium.

It opens the list, searches and filters, walks into a record, compares the two runs, and two annotators
record askcq-preference judgements through the study's form in their own browsers (one reloads mid-way and
submits an item twice from two tabs); the JSONL then holds exactly what they submitted, once each, and
`cq score --task judgements` reads their agreement from it. A passage holding ``<script>``, one holding an
``onerror=`` attribute and a question holding a payload show as text: no dialog opens, no script or image
element is in the page the browser built, and the console reports no script error or blocked script.

`make test-browser` installs what it needs and runs this (marker ``browser``; `make test` leaves it out);
without chromium, chromedriver or selenium it skips, saying which is missing. CQ_SCREENSHOTS=DIR saves the
pages it visits as PNGs (docs/viewer/ holds a set, shown in docs/viewer.md)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from cqtools.metrics.agreement import cohen_kappa

from .conftest import ROOT

pytestmark = pytest.mark.browser
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's cqtools in the `cq view` subprocess
WINDOW = (1200, 900)
SCRIPT, IMG, QUESTION_XSS = "<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "<img src=y onerror=alert(3)>"
RATIONALE_XSS = "<script>alert(4)</script> reads better"

# id, question, gold ambiguous, then per reading: (option, answer, passage title, passage text)
TOPICS = [
    ("joker", "Who played the Joker?", True,
     [("The Dark Knight", "Heath Ledger", "The Dark Knight (film)",
       "Heath Ledger played the Joker in The Dark Knight, released in 2008."),
      ("Joker", "Joaquin Phoenix", "Joker (2019 film)",
       "Joaquin Phoenix played the Joker in Joker, released in 2019.")]),
    ("cup", "When was the last World Cup?", True,
     [("the men's", "2022", "2022 FIFA World Cup", "The men's World Cup was last held in 2022, in Qatar."),
      ("the women's", "2023", "2023 FIFA Women's World Cup",
       "The women's World Cup was last held in 2023, in Australia and New Zealand.")]),
    ("dracula", "Who wrote Dracula?", False,
     [("the novel", "Bram Stoker", "Dracula", "Dracula is an 1897 novel written by Bram Stoker.")]),
    ("payload-passages", "Who painted the Mona Lisa?", False,
     [("the painting", "Leonardo da Vinci", "Mona Lisa " + IMG, "Leonardo da Vinci painted it. " + SCRIPT)]),
    ("payload-question", "Which Harry Potter film " + QUESTION_XSS + " came out first?", True,
     [("in the UK", "Philosopher's Stone", "Harry Potter (film series)",
       "Philosopher's Stone opened first in the UK, in November 2001."),
      ("in the US", "Sorcerer's Stone", "Harry Potter and the Sorcerer's Stone",
       "Sorcerer's Stone opened first in the US, in November 2001.")]),
    ("everest", "How tall is Mount Everest?", True,
     [("by the 2020 survey", "8,848.86 m", "Mount Everest", "The 2020 survey measured 8,848.86 m for the summit."),
      ("by the 1955 survey", "8,848 m", "Survey of India", "The 1955 survey measured 8,848 m for the summit.")]),
]


def record(topic: tuple, run: str) -> dict:
    """One record in cq's schema (docs/schema.md) after retrieve, detect, gen-cq and answer. Run ``b`` answers
    only the first reading and gives each question a lower ambiguity score (under 0.5 for single readings)."""
    rid, question, ambiguous, readings = topic
    n = len(readings)
    passages = [{"id": f"{rid}-p{i}", "title": title, "text": text, "score": 12.0 - i, "rank": i + 1}
                for i, (_, _, title, text) in enumerate(readings)]
    passages.append({"id": f"{rid}-p{n}", "title": "Unrelated", "text": "A passage about something else.",
                     "score": 3.5, "rank": n + 1})
    score = (0.9 if n > 1 else 0.6) - (0.3 if run == "b" else 0.0)
    options = [option for option, *_ in readings]
    cq = "Which do you mean: " + " or ".join(options) + "?"
    answered = readings if run == "a" else readings[:1]
    return {"id": rid, "question": question, "passages": passages,
            "ambiguity": {"label": score >= 0.5, "score": score, "method": "classifier", "threshold": 0.5},
            "cq": {"text": cq, "options": options},
            "answers": [{"option": option, "text": answer} for option, answer, *_ in answered],
            "dqs": [{"question": f"{question} ({option})", "answer": answer} for option, answer, *_ in readings],
            "gold": {"ambiguous": ambiguous, "answers": [[answer] for _, answer, *_ in readings],
                     "dqs": [{"question": f"{question} ({option})", "answers": [answer]}
                             for option, answer, *_ in readings], "cq": cq}}


def choice(annotator: str, item: str) -> str:
    """What each annotator prefers (the logged label): fixed, and not the same for both, so kappa is a number."""
    k = [t[0] for t in TOPICS].index(item)
    base = "cq" if k % 2 == 0 else "dqs"
    if annotator == "bob" and k == 1:
        return "equal"
    if annotator == "bob" and k == 4:
        return "dqs"
    return base


def skip_unless_installed() -> None:
    missing = [name for name in ("chromium", "chromedriver") if not shutil.which(name)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[browser]')")
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: `make test-browser` installs them")


def chromium():
    """A headless Chromium of Debian's packages through Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")  # never Selenium Manager's download
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--lang=en-US"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.unhandled_prompt_behavior = "ignore"  # an alert stays open for check_nothing_ran to find
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


@pytest.fixture
def browsers():
    """Two browsers (two annotators, two profiles); both quit after the test. A skip when one is not installed."""
    skip_unless_installed()
    opened = []

    def new():
        opened.append(chromium())
        return opened[-1]

    yield new
    for driver in opened:
        driver.quit()


@pytest.fixture
def viewer(tmp_path):
    """`cq view A B --study askcq-preference` on a free port in a subprocess: (base URL, judgements file, runs)."""
    runs = {name: [record(t, name) for t in TOPICS] for name in ("a", "b")}
    paths = [tmp_path / f"{name}.jsonl" for name in runs]
    for path, records in zip(paths, runs.values()):
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    log = tmp_path / "judged.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "cqtools", "view", "--port", "0", "--study", "askcq-preference",
                             "--judgements", str(log), "--seed", "0", *map(str, paths)],
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:
        line = proc.stderr.readline()
        address = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert address, line
        yield address.group(0), log, runs
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def shot(driver, name: str) -> None:
    folder = os.environ.get("CQ_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def visible(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def check_nothing_ran(driver, page: str) -> None:
    """No dialog is open, the page the browser built holds no script, image or frame element and no ``on...``
    attribute, and the console holds no error but HTTP statuses (a 409 is one). The pages' CSP forbids every
    script, so an injected one would not run even if escaping failed; Chromium then reports the refusal
    ("Refused to execute inline script/event handler ... Content Security Policy") as a SEVERE console entry
    of source "security", and an <img> as a refused image load: that entry, and the element in the DOM, are
    what show a payload reached the page as markup, so both are failures here, not just a dialog."""
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
        pytest.fail(f"{page}: a dialog opened: {alert.text!r}")
    except NoAlertPresentException:
        pass
    markup = driver.execute_script(  # through the DevTools protocol: the page's CSP does not apply to it
        "return {elements: document.querySelectorAll('script, img, iframe, object, embed').length,"
        " handlers: Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes))"
        ".map(a => a.name).filter(n => n.startsWith('on'))}")
    assert markup == {"elements": 0, "handlers": []}, f"{page}: markup from a record: {markup}"
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and e.get("source") != "network"]
    assert not errors, f"{page}: console: {errors}"


def submit(driver) -> None:
    """Click the page's only button and wait for the next page: a mark set on this page's window is gone from
    the next one's, once it has loaded. (Waiting for the old <html> to go stale raced on a quiet machine:
    chromedriver answered "Node with given id does not belong to the document" instead of a stale element.)"""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.cqSubmitted = true")

    def next_page(d) -> bool:
        try:
            return d.execute_script("return !window.cqSubmitted && document.readyState === 'complete'")
        except WebDriverException:  # the page is being replaced
            return False

    driver.find_element(By.TAG_NAME, "button").click()
    WebDriverWait(driver, 30).until(next_page)


def listed(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [a.text for a in driver.find_elements(By.CSS_SELECTOR, 'table a[href^="/record/"]')]


def walk_the_pages(driver, base: str, runs: dict) -> None:
    """The list (search, a filter), a record holding the payloads, its pair, and the comparison."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    ids = [r["id"] for r in runs["a"]]
    driver.get(base + "/")
    assert listed(driver) == ids and "6 of 6 records of a.jsonl" in visible(driver)
    assert "Which Harry Potter film " + QUESTION_XSS + " came out first?" in visible(driver)
    shot(driver, "list")
    check_nothing_ran(driver, "/")
    driver.find_element(By.NAME, "q").send_keys("world cup")
    submit(driver)
    assert listed(driver) == ["cup"] and "q=world+cup" in driver.current_url
    driver.find_element(By.NAME, "q").clear()
    Select(driver.find_element(By.NAME, "gold")).select_by_value("unambiguous")
    Select(driver.find_element(By.NAME, "predicted")).select_by_value("ambiguous")
    submit(driver)  # detection's false positives
    assert listed(driver) == [r["id"] for r in runs["a"] if not r["gold"]["ambiguous"]] == ["dracula",
                                                                                          "payload-passages"]
    driver.find_element(By.LINK_TEXT, "payload-passages").click()
    text = visible(driver)
    assert "Mona Lisa " + IMG in text and "Leonardo da Vinci painted it. " + SCRIPT in text
    shot(driver, "record")
    check_nothing_ran(driver, "a record's page")
    driver.find_element(By.PARTIAL_LINK_TEXT, "compare with b.jsonl").click()
    assert driver.title == "payload-passages: a.jsonl vs b.jsonl" and SCRIPT in visible(driver)
    check_nothing_ran(driver, "/pair")
    driver.find_element(By.LINK_TEXT, "compare").click()
    pairs = [a.text for a in driver.find_elements(By.CSS_SELECTOR, 'table a[href^="/pair"]')]
    # every pair differs: B's lower scores make the one-reading questions unambiguous (detection right: +1), its
    # answers to the others lose a reading (answer F1 -1/3); largest change first
    assert sorted(pairs) == sorted(ids) and set(pairs[:2]) == {"dracula", "payload-passages"}
    assert "6 pairs that differ" in visible(driver)
    shot(driver, "compare")
    driver.find_element(By.LINK_TEXT, "joker").click()
    assert "Joaquin Phoenix" in visible(driver) and "B - A" in visible(driver)
    shot(driver, "pair")
    check_nothing_ran(driver, "/compare and /pair")


def start_study(driver, base: str, name: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + "/study")
    assert "6 items to judge (askcq-preference)" in visible(driver)
    driver.find_element(By.NAME, "annotator").send_keys(name)
    submit(driver)


def shown_item(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.NAME, "item").get_attribute("value")


def judge(driver, name: str, count: int, submitted: list, screenshot: bool = False) -> None:
    """``count`` items as ``name`` would: read which side is the CQ, pick by :func:`choice`, give a reason."""
    from selenium.webdriver.common.by import By

    for _ in range(count):
        item = shown_item(driver)
        first, second = (box.text for box in driver.find_elements(By.CSS_SELECTOR, ".cols > .box"))
        assert ("A clarifying question" in first) != ("A clarifying question" in second)
        want = choice(name, item)
        label = "equal" if want == "equal" else "first" if (want == "cq") == ("A clarifying question" in first) \
            else "second"
        driver.find_element(By.CSS_SELECTOR, f'input[name="label"][value="{label}"]').click()
        driver.find_element(By.NAME, "rationale").send_keys(RATIONALE_XSS if item == "joker" else f"{name}: {want}")
        if screenshot:
            shot(driver, "study")
            screenshot = False
        check_nothing_ran(driver, f"/study for {name}")
        submit(driver)
        submitted.append((name, item, want))


def test_a_person_walks_compares_and_two_annotators_judge_in_chromium(browsers, viewer):
    from selenium.webdriver.common.by import By

    base, log, runs = viewer
    ann, bob = browsers(), browsers()
    walk_the_pages(ann, base, runs)
    submitted = []
    start_study(ann, base, "ann")
    judge(ann, "ann", 3, submitted, screenshot=True)
    before = shown_item(ann)
    ann.refresh()  # a reload shows the same next item: nothing lost, nothing skipped
    assert shown_item(ann) == before and "ann: 3 of 6 judged" in visible(ann)
    # the same item open in a second tab and submitted from both: the second is refused (409), kept as it was
    first_tab = ann.current_window_handle
    ann.switch_to.new_window("tab")
    ann.get(base + "/study?annotator=ann")
    assert shown_item(ann) == before
    ann.find_element(By.CSS_SELECTOR, 'input[name="label"][value="equal"]').click()
    ann.switch_to.window(first_tab)
    judge(ann, "ann", 1, submitted)
    ann.switch_to.window(ann.window_handles[-1])
    submit(ann)
    assert "ann already judged this item; it is kept as it was" in visible(ann)
    ann.find_element(By.LINK_TEXT, "Continue").click()
    assert "ann: 4 of 6 judged" in visible(ann)
    start_study(bob, base, "bob")
    judge(bob, "bob", 6, submitted)
    judge(ann, "ann", 2, submitted)
    for driver, name in ((ann, "ann"), (bob, "bob")):
        driver.refresh()
        assert f"Thank you, {name}: all 6 items are judged" in visible(driver)
        check_nothing_ran(driver, f"the end for {name}")
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert sorted((j["annotator"], j["item"], j["label"]) for j in lines) == sorted(submitted)
    assert len(lines) == 12 and len({j["id"] for j in lines}) == 12
    assert [j["rationale"] for j in lines if j["item"] == "joker"] == [RATIONALE_XSS] * 2  # stored as typed
    scored = subprocess.run([sys.executable, "-m", "cqtools", "score", "--task", "judgements"], input=log.read_bytes(),
                            capture_output=True, cwd=ROOT, env=ENV, timeout=300)
    assert scored.returncode == 0, scored.stderr.decode()
    summary = orjson.loads(scored.stdout)
    labels = {(name, item): want for name, item, want in submitted}
    assert summary["counts"] == {f"prefer_{side}": sum(1 for want in labels.values() if want == side)
                                 for side in ("cq", "dqs", "equal")}
    items = [t[0] for t in TOPICS]
    expected = cohen_kappa([labels["ann", i] for i in items], [labels["bob", i] for i in items])
    agreement = summary["agreement"]
    assert agreement["annotators"] == ["ann", "bob"] and agreement["items_all_judged"] == 6
    assert agreement["cohen_kappa"] == pytest.approx(expected, abs=1e-4) and 0 < expected < 1
    print(f"agreement of ann and bob: Cohen's kappa {agreement['cohen_kappa']} over n = 6 items "
          f"(askcq-preference; counts {summary['counts']})")
