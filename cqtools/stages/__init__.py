"""Stage logic: pure-ish functions over batches of records, one module per stage."""
