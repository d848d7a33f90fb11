"""Where the chain meets the database of this process: the run store, the council as a run."""
