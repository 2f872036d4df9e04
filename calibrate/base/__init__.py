"""What every other folder stands on, and which imports nothing of calibrate's: the errors and their
messages (:mod:`~calibrate.base.errors`), files written whole or not at all and folder locks
(:mod:`~calibrate.base.files`), SQLite stores with ordered migrations (:mod:`~calibrate.base.sqlite_store`)
and the manifest recorded beside every result (:mod:`~calibrate.base.manifest`)."""
