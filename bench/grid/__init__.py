"""The experiment grid's own scripts (`make compare`, experiments.mk), apart from the one-off benchmarks in bench/:

    cell.py     runs one cell in one process: its wall time (F.wall), its terminal line and log (F.log), and
                the fork server that serves the cells' cq commands (SERVE=1)
    wall.py     a cell's wall time over its attempts (F.part.attempts -> F.wall)
    report.py   docs/results.md from the cells' scores and paired comparisons
    figures.py  the forest plots beside results.md
"""
