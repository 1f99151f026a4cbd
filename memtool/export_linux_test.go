package memtool

// UseWalk makes DirFS resolve parent directories with the portable
// component walk instead of openat2 (as on kernels without openat2) until
// the returned function is called.
func UseWalk() (restore func()) {
	old := openat2Unsupported.Swap(true)
	return func() { openat2Unsupported.Store(old) }
}
