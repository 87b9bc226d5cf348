"""The orchestrators: what keeps the store and the derived indexes in step.

`engine.Engine` owns writes, reads and searches of one home and its budget of loaded indexes;
`partition_index.PartitionIndex` keeps one (agent, tier) index in step with the store's change log, saves, loads,
checks and rebuilds it; `transfer` exports and imports whole agents. Below this package, `index/`
and `search/` are pure data structures and functions that never touch the store; above it, `Memory`
is the only door."""
