"""`cq answer` (placeholder until its issue lands)."""
from .options import not_implemented

cli = not_implemented("answer", "see the issue tracker")
