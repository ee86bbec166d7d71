"""`cq detect` (placeholder until its issue lands)."""
from .options import not_implemented

cli = not_implemented("detect", "see the issue tracker")
