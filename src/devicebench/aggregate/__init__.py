"""Aggregate stage: cell records into tidy tables, derived tables and charts."""
