"""``python -m cqtools`` runs ``cq`` (also how ``accelerate launch -m cqtools ...`` starts it)."""
from .forkserver.client import cq

cq()
