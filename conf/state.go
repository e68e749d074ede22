package conf

// State options: where keyed state lives and how a job restores it.

// Values of StateBackendType.
const (
	StateBackendHashMap = "hashmap"
	StateBackendPebble  = "pebble"
)

var (
	// StateBackendType selects the keyed state backend.
	StateBackendType = Enum("state.backend.type", StateBackendHashMap,
		[]string{StateBackendHashMap, StateBackendPebble},
		"Keyed state backend: hashmap keeps state in memory; pebble keeps it in an embedded "+
			"Pebble store on local disk, for state larger than memory and incremental checkpoints; "+
			"it takes the place of Flink's rocksdb.").
		WithDeprecatedKeys("state.backend")

	// StatePebbleLocalDir is where the pebble backend keeps its databases.
	StatePebbleLocalDir = String("state.backend.pebble.localdir", "",
		"Local directory of the pebble state backend (Flink's state.backend.rocksdb.localdir): every keyed "+
			"operator subtask keeps its database in a directory of its own under it, removed when the subtask ends. "+
			"Use a local disk with room for the state and its checkpoints.").
		WithDefaultDoc("(none): <system temp dir>/sluice-pebble")

	// StatePebbleBlockCacheSize is the block cache of each pebble database.
	StatePebbleBlockCacheSize = Memory("state.backend.pebble.block.cache-size", 8*MiB,
		"Block cache of each keyed operator subtask's pebble database (Flink's state.backend.rocksdb.block.cache-size).").
		WithCheck(AtLeast(MiB))

	// StatePebbleWriteBufferSize is the memtable size of each pebble database.
	StatePebbleWriteBufferSize = Memory("state.backend.pebble.writebuffer.size", 16*MiB,
		"Memtable size of each keyed operator subtask's pebble database: writes collect in memory up to this "+
			"size before they are flushed to disk (Flink's state.backend.rocksdb.writebuffer.size).").
		WithCheck(AtLeast(MiB))

	// StateRecoveryPath is a savepoint or retained checkpoint to start the job from.
	StateRecoveryPath = String("execution.state-recovery.path", "",
		"Path of a savepoint or retained checkpoint to restore the job from, e.g. hdfs:///sluice/savepoints/savepoint-1a2b3c.").
		WithDefaultDoc("(none): start without state").
		WithDeprecatedKeys("execution.savepoint.path")

	// StateRecoveryIgnoreUnclaimedState allows restoring when the snapshot has state no operator claims.
	StateRecoveryIgnoreUnclaimedState = Bool("execution.state-recovery.ignore-unclaimed-state", false,
		"Whether to restore even though the snapshot holds state that no operator of the job claims, "+
			"e.g. after an operator was removed. When false such a restore fails.").
		WithDeprecatedKeys("execution.savepoint.ignore-unclaimed-state")
)

func stateOptions() []AnyOption {
	return []AnyOption{StateBackendType, StatePebbleLocalDir, StatePebbleBlockCacheSize, StatePebbleWriteBufferSize,
		StateRecoveryPath, StateRecoveryIgnoreUnclaimedState}
}
