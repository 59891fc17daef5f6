"""dreamd: consolidation passes over agent memory folders that propose, never silently change."""

__version__ = "0.1.0"
