"""`cq score` (placeholder until its issue lands)."""
from .options import not_implemented

cli = not_implemented("score", "see the issue tracker")
