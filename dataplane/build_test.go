package dataplane

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane/l3"
)

// TestNoStatementTwiceInARow: no block of the package's code runs the same
// statement twice in a row, the mark of a line pasted twice (New once built
// the router twice and set a port's addresses twice).
func TestNoStatementTwiceInARow(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	text := func(n ast.Node) string {
		var b bytes.Buffer
		printer.Fprint(&b, fset, n)
		return b.String()
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var list []ast.Stmt
			switch b := n.(type) {
			case *ast.BlockStmt:
				list = b.List
			case *ast.CaseClause:
				list = b.Body
			case *ast.CommClause:
				list = b.Body
			}
			for i := 1; i < len(list); i++ {
				if a := text(list[i-1]); a == text(list[i]) {
					t.Errorf("%s: %q twice in a row", fset.Position(list[i].Pos()), strings.SplitN(a, "\n", 2)[0])
				}
			}
			return true
		})
	}
}

// allocated is the bytes f allocates, the least of a few runs.
func allocated(f func()) uint64 {
	least := ^uint64(0)
	for i := 0; i < 5; i++ {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		least = min(least, b.TotalAlloc-a.TotalAlloc)
	}
	return least
}

// TestNewBuildsTheRouterOnce: an L3 switch costs one router more than the
// same switch on L2 ports, not two (New built the router twice).
func TestNewBuildsTheRouterOnce(t *testing.T) {
	build := func(addrs bool) func() {
		return func() {
			mem := make([]byte, 4096*frameSize)
			cfg := Config{Config: config.Config{Workers: 1}, Clock: &fakeClock{t: 1}}
			var links [][]Link
			for i := 0; i < 2; i++ {
				pc := config.Port{Name: string(rune('a' + i))}
				if addrs {
					pc.Addrs = []netip.Prefix{netip.MustParsePrefix([]string{"10.0.1.1/24", "10.0.2.1/24"}[i])}
				}
				cfg.Ports = append(cfg.Ports, pc)
				links = append(links, []Link{NewMemLink(mem, frameSize, 64)})
			}
			if err := cfg.Complete(); err != nil {
				t.Fatal(err)
			}
			s, err := New(cfg, mem, frameSize, links)
			if err != nil {
				t.Fatal(err)
			}
			if (s.router != nil) != addrs {
				t.Fatalf("addresses %v, router %v", addrs, s.router != nil)
			}
			s.Close()
		}
	}
	// The neighbour table is most of a router.
	nbrs := allocated(func() {
		if _, err := l3.NewNeighbors(4096, 60e9, l3.Ports(2)); err != nil { // as newRouter builds it for the two ports
			t.Fatal(err)
		}
	})
	router := int64(allocated(build(true))) - int64(allocated(build(false)))
	t.Logf("an L3 switch allocates %d B more than an L2 one; a neighbour table takes %d B", router, nbrs)
	if router < int64(nbrs) || router > int64(nbrs)*3/2 {
		t.Fatalf("an L3 switch allocates %d B more than an L2 one: want one router, %d B of neighbour table and a little more", router, nbrs)
	}
}
