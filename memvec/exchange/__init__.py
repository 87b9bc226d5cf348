"""Data documents with no behaviour of their own: the export format, consolidation runs, Letta's agent
file read into exports, and the reports `Memory`'s maintenance methods return."""
