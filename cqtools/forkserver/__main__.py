"""python -m cqtools.forkserver PATH [--idle SECONDS]: serve cq runs at PATH (the package's docstring)."""
from .server import main

main()
