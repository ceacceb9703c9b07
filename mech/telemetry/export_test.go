package telemetry

// SetTxBytes sets port i's tx counter, so that a test sees it wrap.
func SetTxBytes(t *INT, i int, v uint64) { t.ports[i].tx = v }
