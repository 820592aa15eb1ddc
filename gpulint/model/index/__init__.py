"""Layer 1, the index: the file's text and tree, walked once (`walk`), the
per-file index every other layer asks (`tree.TreeIndex`), and source-order
helpers (`order`)."""
