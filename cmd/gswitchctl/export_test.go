package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/topo"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The k8s example: deploy/k8s holds the export of this file with the
// default flags (deploy/k8s/README.md gives the commands).
const (
	k8sExampleTopology = "../../topologies/bfc-testbed.yaml"
	k8sDir             = "../../deploy/k8s"
)

// schemas compiles containerlab's published schema of its topology file
// and the openAPIV3Schema of clabernetes' Topology CRD (testdata/README.md
// says where each comes from).
func schemas(t *testing.T) (clab, topology *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	f, err := os.Open("testdata/clab.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	const clabURL = "https://containerlab.dev/clab.schema.json"
	if err := c.AddResource(clabURL, doc); err != nil {
		t.Fatal(err)
	}
	if clab, err = c.Compile(clabURL); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/clabernetes-topology-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema any `yaml:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
		t.Fatalf("the CRD has versions %+v, want v1alpha1 alone", crd.Spec.Versions)
	}
	const crdURL = "file:///clabernetes-topology-v1alpha1.json"
	if err := c.AddResource(crdURL, jsonOf(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema)); err != nil {
		t.Fatal(err)
	}
	if topology, err = c.Compile(crdURL); err != nil {
		t.Fatal(err)
	}
	return clab, topology
}

// jsonOf turns a decoded YAML value into the JSON values the validator takes.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// yamlDocs decodes every document of a YAML stream.
func yamlDocs(t *testing.T, b []byte) []any {
	t.Helper()
	var docs []any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, v)
	}
}

// shippedTopologies are every topology file under topologies/.
func shippedTopologies(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("../../topologies", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 5 {
		t.Fatalf("topologies: %v, %d files", err, len(files))
	}
	return files
}

// TestExportShippedTopologiesValidate exports every shipped topology under
// its defaults and each of its designs, to containerlab and clabernetes,
// and validates the files against containerlab's schema and clabernetes'
// CRD, the switches' configs as gswitchd reads them, and the wiring: each
// switch port on one link, on the interface its config names.
func TestExportShippedTopologiesValidate(t *testing.T) {
	clab, topology := schemas(t)
	o := exportOptions{Image: defaultExportImage, HostImage: defaultHostImage, Namespace: defaultNamespace}
	n := 0
	for _, file := range shippedTopologies(t) {
		base, err := topo.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, design := range append([]string{""}, base.DesignNames()...) {
			tp, err := base.WithDesign(design)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s design %q", file, design)
			o.Format = "containerlab"
			files, err := exportFiles(tp, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			lab := files[tp.Name+".clab.yml"]
			docs := yamlDocs(t, lab)
			if len(docs) != 1 {
				t.Fatalf("%s: %d YAML documents", name, len(docs))
			}
			if err := clab.Validate(jsonOf(t, docs[0])); err != nil {
				t.Errorf("%s: the containerlab file does not validate against containerlab's schema: %v\n%s", name, err, lab)
				continue
			}
			checkWiring(t, name, tp, lab, files)

			o.Format = "clabernetes"
			k8s, err := exportFiles(tp, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkClabernetes(t, name, tp, k8s[tp.Name+".clabernetes.yaml"], lab, files, clab, topology)
			n++
		}
	}
	t.Logf("%d exports validated against containerlab's schema and clabernetes' Topology CRD", n)
}

// checkWiring checks the exported switches' configs (valid for gswitchd,
// ports on eth1..ethN in order, metrics on :9100) and that the links join
// each switch port and each host once.
func checkWiring(t *testing.T, name string, tp *topo.Topology, lab []byte, files map[string][]byte) {
	t.Helper()
	var f struct {
		Topology struct {
			Nodes map[string]clabNode
			Links []clabLink
		}
	}
	if err := yaml.Unmarshal(lab, &f); err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for _, l := range f.Topology.Links {
		for _, e := range l.Endpoints {
			used[e]++
		}
	}
	for _, s := range tp.Switches {
		b := files[exportConfigDir+"/"+s.Name+".yaml"]
		c, err := config.Parse(b)
		if err != nil {
			t.Errorf("%s: switch %s: gswitchd refuses the exported config: %v", name, s.Name, err)
			continue
		}
		if c.Metrics != "0.0.0.0:9100" {
			t.Errorf("%s: switch %s: metrics %q", name, s.Name, c.Metrics)
		}
		for i, p := range c.Ports {
			want := fmt.Sprintf("eth%d", i+1)
			if p.Interface != want {
				t.Errorf("%s: switch %s: ports[%d].interface %s, want %s", name, s.Name, i, p.Interface, want)
			}
			if used[s.Name+":"+want] != 1 {
				t.Errorf("%s: %s:%s is on %d links, want 1", name, s.Name, want, used[s.Name+":"+want])
			}
		}
		node := f.Topology.Nodes[s.Name]
		if node.Image != defaultExportImage || len(node.Binds) != 1 || !strings.HasPrefix(node.Binds[0], exportConfigDir+"/"+s.Name+".yaml:") {
			t.Errorf("%s: switch node %s: %+v", name, s.Name, node)
		}
	}
	for _, h := range tp.Hosts {
		if used[h.Name+":eth1"] != 1 {
			t.Errorf("%s: host %s's eth1 is on %d links, want 1", name, h.Name, used[h.Name+":eth1"])
		}
		if node := f.Topology.Nodes[h.Name]; node.NetworkMode != "none" || len(node.Exec) < 4 {
			t.Errorf("%s: host node %s: %+v", name, h.Name, node)
		}
	}
	if len(f.Topology.Nodes) != len(tp.Switches)+len(tp.Hosts) || len(f.Topology.Links) != len(tp.Links) {
		t.Errorf("%s: %d nodes, %d links for %d switches, %d hosts, %d links", name, len(f.Topology.Nodes), len(f.Topology.Links), len(tp.Switches), len(tp.Hosts), len(tp.Links))
	}
}

// checkClabernetes validates the clabernetes manifest: its Topology
// against the CRD, the containerlab file it wraps (the same as the
// containerlab export) against containerlab's schema, and a ConfigMap
// holding each switch's config mounted where the file binds it.
func checkClabernetes(t *testing.T, name string, tp *topo.Topology, manifest, lab []byte, files map[string][]byte, clab, topology *jsonschema.Schema) {
	t.Helper()
	docs := yamlDocs(t, manifest)
	if len(docs) != 3 {
		t.Fatalf("%s: %d documents in the clabernetes manifest, want 3 (Namespace, ConfigMap, Topology)", name, len(docs))
	}
	kinds := []string{"Namespace", "ConfigMap", "Topology"}
	for i, d := range docs {
		if k := d.(map[string]any)["kind"]; k != kinds[i] {
			t.Fatalf("%s: document %d is a %v, want %s", name, i, k, kinds[i])
		}
	}
	if err := topology.Validate(jsonOf(t, docs[2])); err != nil {
		t.Errorf("%s: the Topology does not validate against clabernetes' CRD: %v", name, err)
	}
	var m struct {
		Data map[string]string
		Spec struct {
			Definition struct{ Containerlab string }
			Deployment struct {
				FilesFromConfigMap map[string][]struct {
					FilePath      string `yaml:"filePath"`
					ConfigMapName string `yaml:"configMapName"`
					ConfigMapPath string `yaml:"configMapPath"`
					Mode          string `yaml:"mode"`
				} `yaml:"filesFromConfigMap"`
			}
			Expose struct {
				ExposeType string `yaml:"exposeType"`
			}
		}
	}
	// The ConfigMap's data and the Topology's spec, into one value.
	for _, d := range docs[1:] {
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
	}
	if m.Spec.Definition.Containerlab != string(lab) {
		t.Errorf("%s: the Topology's containerlab definition is not the containerlab export", name)
	}
	inner := yamlDocs(t, []byte(m.Spec.Definition.Containerlab))
	if err := clab.Validate(jsonOf(t, inner[0])); err != nil {
		t.Errorf("%s: the Topology's containerlab definition does not validate: %v", name, err)
	}
	for _, s := range tp.Switches {
		key := s.Name + ".yaml"
		if m.Data[key] != string(files[exportConfigDir+"/"+key]) {
			t.Errorf("%s: the ConfigMap's %s is not the exported config", name, key)
		}
		mounts := m.Spec.Deployment.FilesFromConfigMap[s.Name]
		if len(mounts) != 1 || mounts[0].FilePath != exportConfigDir+"/"+key || mounts[0].ConfigMapPath != key || mounts[0].ConfigMapName != tp.Name+"-"+exportConfigDir {
			t.Errorf("%s: switch %s's files from the ConfigMap: %+v", name, s.Name, mounts)
		}
	}
	if len(m.Data) != len(tp.Switches) || m.Spec.Expose.ExposeType != "ClusterIP" {
		t.Errorf("%s: ConfigMap keys %d for %d switches, expose %q", name, len(m.Data), len(tp.Switches), m.Spec.Expose.ExposeType)
	}
}

// TestExportSchemasRefuse checks that the validation above can fail: an
// unknown node key, a link of MTU 0, a Topology
// without naming or with an unknown connectivity are refused.
func TestExportSchemasRefuse(t *testing.T) {
	clab, topology := schemas(t)
	tp, err := topo.Load(k8sExampleTopology)
	if err != nil {
		t.Fatal(err)
	}
	files, err := exportFiles(tp, exportOptions{Format: "containerlab", Image: defaultExportImage, HostImage: defaultHostImage})
	if err != nil {
		t.Fatal(err)
	}
	lab := string(files[tp.Name+".clab.yml"])
	for what, bad := range map[string]string{
		"an unknown node key":      strings.Replace(lab, "      kind: linux\n", "      kind: linux\n      colour: blue\n", 1),
		"a link of MTU 0":          strings.Replace(lab, "      mtu: 1500\n", "      mtu: 0\n", 1),
		"a node name with a space": strings.Replace(lab, "    sw1:\n", "    sw 1:\n", 1),
		"a bad port mapping":       strings.Replace(lab, "9571:9100/tcp", "9571:9100/quic", 1),
	} {
		if bad == lab {
			t.Fatalf("%s: the edit did not apply", what)
		}
		if err := clab.Validate(jsonOf(t, yamlDocs(t, []byte(bad))[0])); err == nil {
			t.Errorf("containerlab's schema took a file with %s", what)
		}
	}
	o := exportOptions{Format: "clabernetes", Image: defaultExportImage, HostImage: defaultHostImage, Namespace: defaultNamespace}
	k8s, err := exportFiles(tp, o)
	if err != nil {
		t.Fatal(err)
	}
	docs := yamlDocs(t, k8s[tp.Name+".clabernetes.yaml"])
	spec := docs[2].(map[string]any)["spec"].(map[string]any)
	delete(spec, "naming")
	if err := topology.Validate(jsonOf(t, docs[2])); err == nil {
		t.Error("the CRD took a Topology without naming (a required key)")
	}
	spec["naming"], spec["connectivity"] = "prefixed", "carrier-pigeon"
	if err := topology.Validate(jsonOf(t, docs[2])); err == nil {
		t.Error("the CRD took a Topology with connectivity carrier-pigeon")
	}
}

// TestExportK8sExampleUpToDate checks that deploy/k8s holds the export of
// the BFC testbed as the commands in deploy/k8s/README.md write it.
func TestExportK8sExampleUpToDate(t *testing.T) {
	tp, err := topo.Load(k8sExampleTopology)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, format := range []string{"containerlab", "clabernetes"} {
		files, err := exportFiles(tp, exportOptions{Format: format, Image: defaultExportImage, HostImage: defaultHostImage, Namespace: defaultNamespace})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range files {
			want[k] = v
		}
	}
	const regen = "regenerate: go run ./cmd/gswitchctl topo export -o deploy/k8s topologies/bfc-testbed.yaml && go run ./cmd/gswitchctl topo export -format clabernetes -o deploy/k8s topologies/bfc-testbed.yaml"
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(k8sDir, name))
		if err != nil {
			t.Errorf("deploy/k8s/%s: %v (%s)", name, err, regen)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("deploy/k8s/%s is not what topo export writes now (%s)", name, regen)
		}
	}
	have, _ := filepath.Glob(filepath.Join(k8sDir, exportConfigDir, "*"))
	var extra []string
	for _, p := range have {
		if _, ok := want[exportConfigDir+"/"+filepath.Base(p)]; !ok {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("deploy/k8s has configs no switch of the example has: %v", extra)
	}
}

// TestExportTimescale: a file with timescale: auto is refused without a
// K; -timescale K writes K into every config.
func TestExportTimescale(t *testing.T) {
	src := "name: tsx\nmode: l3\ntimescale: auto\nswitches: {sw: {}}\nhosts:\n  h1: {addr: 10.9.1.1/24}\n  h2: {addr: 10.9.2.1/24}\nlinks:\n  - {a: h1, b: sw, rate: 10Gbit}\n  - {a: h2, b: sw, rate: 10Gbit}\n"
	dir := t.TempDir()
	file := filepath.Join(dir, "tsx.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exportFiles(tp, exportOptions{Format: "containerlab"}); err == nil || !strings.Contains(err.Error(), "-timescale K") {
		t.Errorf("timescale: auto exported without -timescale: %v", err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := capture(t, func() int { return dispatch([]string{"topo", "export", "-timescale", "100", "-o", out, file}) })
	if code != 0 || !strings.Contains(stdout, filepath.Join(out, exportConfigDir, "sw.yaml")) {
		t.Fatalf("topo export -timescale 100: exit %d\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, exportConfigDir, "sw.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(b)
	if err != nil || c.Timescale.String() != "100" {
		t.Errorf("the config at -timescale 100: %v, timescale %v\n%s", err, c, b)
	}
	if code, _, stderr := capture(t, func() int { return topoExport([]string{"-format", "kne", "-timescale", "100", "-o", out, file}) }); code == 0 || !strings.Contains(stderr, "write containerlab or clabernetes") {
		t.Errorf("topo export -format kne: exit %d, %s", code, stderr)
	}
}

// TestK8sPrometheusConfig checks deploy/k8s/prometheus.yml against what
// the export makes: it keeps the expose services' port named after the
// switches' metrics port (clabernetes names a service port
// port-<container port>-<protocol>) and labels samples by switch and
// topology. promtool checks its syntax where it knows Kubernetes service
// discovery (Debian's build leaves it out).
func TestK8sPrometheusConfig(t *testing.T) {
	path := filepath.Join(k8sDir, "prometheus.yml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName             string `yaml:"job_name"`
			KubernetesSDConfigs []struct {
				Role       string
				Namespaces struct{ Names []string }
			} `yaml:"kubernetes_sd_configs"`
			RelabelConfigs []struct {
				SourceLabels []string `yaml:"source_labels"`
				Regex        string
				Action       string
				TargetLabel  string `yaml:"target_label"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ScrapeConfigs) != 1 || len(cfg.ScrapeConfigs[0].KubernetesSDConfigs) != 1 {
		t.Fatalf("%s: want one scrape config with one kubernetes_sd_configs entry: %+v", path, cfg)
	}
	sc := cfg.ScrapeConfigs[0]
	sd := sc.KubernetesSDConfigs[0]
	if sd.Role != "endpoints" || len(sd.Namespaces.Names) != 1 || sd.Namespaces.Names[0] != defaultNamespace {
		t.Errorf("%s: service discovery %+v, want endpoints in namespace %s", path, sd, defaultNamespace)
	}
	keep := fmt.Sprintf("expose;port-%d-tcp", exportMetricsPort)
	targets := map[string]string{}
	kept := false
	for _, r := range sc.RelabelConfigs {
		if r.Action == "keep" && r.Regex == keep {
			kept = true
		}
		if r.TargetLabel != "" && len(r.SourceLabels) == 1 {
			targets[r.TargetLabel] = r.SourceLabels[0]
		}
	}
	if !kept {
		t.Errorf("%s: no keep rule %q", path, keep)
	}
	if targets["switch"] != "__meta_kubernetes_service_label_clabernetes_topologyNode" || targets["topology"] != "__meta_kubernetes_service_label_clabernetes_topologyOwner" {
		t.Errorf("%s: switch and topology labels from %v", path, targets)
	}
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Log("promtool is not installed: syntax not checked (apt-get install prometheus)")
		return
	}
	out, err := exec.Command("promtool", "check", "config", "--syntax-only", path).CombinedOutput()
	switch {
	case err == nil:
		t.Logf("promtool: %s", strings.TrimSpace(string(out)))
	case strings.Contains(string(out), "kubernetes_sd_configs not found"):
		t.Log("this promtool is built without Kubernetes service discovery (Debian's is): syntax not checked")
	default:
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}
