"""Line search, shared by the notebook tool's find and the files tool's search."""
