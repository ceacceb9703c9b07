// Package bpf holds gswitchd's XDP program and its loader.
//
// The program (xdp.c) redirects each received frame to the AF_XDP socket
// registered for the frame's rx queue in the XSKMAP "xsks". bpf2go compiles it
// into xdp_bpfel.o / xdp_bpfeb.o and the Go bindings beside them; those files
// are committed, so building gswitchd needs no clang. Run `go generate ./bpf`
// (needs clang) after changing xdp.c.
//
// Port.Attach holds the program on its interface through a bpf_link, so it
// goes when gswitchd exits. An XDP program already on the interface is
// looked up (rtnetlink for its id and attach mode, the bpf syscall for its
// name, tag, maps and bpf_link) and removed only if it is gswitchd's own,
// attached through netlink: a leftover. Anything else is left alone and
// Attach fails with an InUseError that names it and says how to remove it.
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel,bpfeb xdp xdp.c
