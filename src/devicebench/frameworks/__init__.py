"""Frameworks that can run a cell; each module here trains and infers one task's model."""

FRAMEWORKS: tuple[str, ...] = ("torch",)
