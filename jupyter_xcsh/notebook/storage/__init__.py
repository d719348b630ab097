"""Reading and saving notebooks: the one reader and writer of the files."""
