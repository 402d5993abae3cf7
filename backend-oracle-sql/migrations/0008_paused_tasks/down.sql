DROP TABLE {paused};
