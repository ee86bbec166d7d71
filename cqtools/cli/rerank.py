"""`cq rerank` (placeholder until its issue lands)."""
from .options import not_implemented

cli = not_implemented("rerank", "see the issue tracker")
