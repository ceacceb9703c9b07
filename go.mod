module github.com/gswitch/gswitch

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
