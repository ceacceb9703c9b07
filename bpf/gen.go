// Package bpf holds gswitchd's XDP program and its loader.
//
// The program (xdp.c) redirects each received frame to the AF_XDP socket
// registered for the frame's rx queue in the XSKMAP "xsks". bpf2go compiles it
// into xdp_bpfel.o / xdp_bpfeb.o and the Go bindings beside them; those files
// are committed, so building gswitchd needs no clang. Run `go generate ./bpf`
// (needs clang) after changing xdp.c.
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel,bpfeb xdp xdp.c
