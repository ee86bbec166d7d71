"""`cq gen-cq` (placeholder until its issue lands)."""
from .options import not_implemented

cli = not_implemented("gen-cq", "see the issue tracker")
