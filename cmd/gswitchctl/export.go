package main

// gswitchctl topo export: a topology file in another engine's format.
//
// containerlab (its own topology file, which clabernetes runs on
// Kubernetes, one launcher pod per node, links as VXLAN between them):
// one linux node per switch on gswitch's image (scripts/image.sh) with its
// gswitchd config bound at /etc/gswitch/gswitchd.yaml, one linux node per
// host on an image with iproute2 set up by exec as topo up sets a host's
// namespace up, one link per link. Each switch's config is the one topo up
// writes (topo.Plan), with the ports renamed to the container's eth1..ethN
// and the metrics on :9100, published on the topology's metrics port.
// clabernetes: the same file in a clabernetes Topology, the configs in a
// ConfigMap the launchers mount.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/topo"
	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// Defaults of topo export's flags.
const (
	defaultExportImage = "gswitch:latest"
	// defaultHostImage is an image with iproute2 (what a host's exec
	// needs), ping, iperf3 and tcpdump.
	defaultHostImage = "nicolaka/netshoot:v0.13"
	defaultNamespace = "gswitch"
	// exportMetricsPort is where each switch serves its metrics in its
	// container (every container has a network namespace of its own).
	exportMetricsPort = 9100
	// exportConfigDir holds the switches' configs, beside the topology file.
	exportConfigDir = "gswitchd"
)

// switchCaps are the capabilities a switch's container gets (deploy/container/README.md
// says why each); SYS_NICE is added for a config with realtime: or a negative nice:.
var switchCaps = []string{"NET_ADMIN", "NET_RAW", "BPF", "IPC_LOCK"}

// exportOptions are topo export's flags.
type exportOptions struct {
	Format    string // "containerlab" or "clabernetes"
	Image     string // the switches' image
	HostImage string // the hosts' image
	Namespace string // clabernetes: the Kubernetes namespace
}

func topoExport(args []string) int {
	fs := flags("export")
	var o exportOptions
	fs.StringVar(&o.Format, "format", "containerlab", "containerlab or clabernetes")
	fs.StringVar(&o.Image, "image", defaultExportImage, "the switches' image (scripts/image.sh builds it)")
	fs.StringVar(&o.HostImage, "host-image", defaultHostImage, "the hosts' image (needs iproute2)")
	fs.StringVar(&o.Namespace, "namespace", defaultNamespace, "clabernetes: the Kubernetes namespace")
	out := fs.String("o", ".", "directory to write the files into")
	design := fs.String("design", "", "export the fabric under this design of the file")
	scale := fs.String("timescale", "", "the timescale K to write into the configs (the file's own by default; needed for timescale: auto)")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("export", err)
	}
	t, code := loadDesign("export", pos, 1, *design)
	if t == nil {
		return code
	}
	if *scale != "" {
		k, err := units.ParseTimescale(*scale)
		if err != nil {
			return usageErr("export", fmt.Errorf("-timescale: %w", err))
		}
		if t, err = t.WithTimescale(k); err != nil {
			return fail(fmt.Errorf("%s: -timescale %s: %w", pos[0], *scale, err))
		}
	}
	files, err := exportFiles(t, o)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", pos[0], err))
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(*out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return fail(err)
		}
		fmt.Println(path)
	}
	return 0
}

// exportFiles returns the export of t in format o.Format, by path relative
// to the output directory.
func exportFiles(t *topo.Topology, o exportOptions) (map[string][]byte, error) {
	if t.TimescaleAuto {
		return nil, fmt.Errorf("timescale: auto is measured on the machine that runs the fabric: give topo export -timescale K (gswitchctl topo up prints the K it chose here)")
	}
	p, err := t.Plan()
	if err != nil {
		return nil, err
	}
	lab, configs, err := containerlab(t, p, o)
	if err != nil {
		return nil, err
	}
	switch o.Format {
	case "containerlab":
		files := map[string][]byte{t.Name + ".clab.yml": lab}
		for sw, b := range configs {
			files[exportConfigDir+"/"+sw+".yaml"] = b
		}
		return files, nil
	case "clabernetes":
		b, err := clabernetes(t, p, o, lab, configs)
		if err != nil {
			return nil, err
		}
		return map[string][]byte{t.Name + ".clabernetes.yaml": b}, nil
	}
	return nil, fmt.Errorf("-format %q: write containerlab or clabernetes", o.Format)
}

// clabNode is a containerlab node (the keys of its schema used here).
type clabNode struct {
	Kind        string            `yaml:"kind"`
	Image       string            `yaml:"image"`
	NetworkMode string            `yaml:"network-mode,omitempty"`
	Privileged  *bool             `yaml:"privileged,omitempty"`
	CapAdd      []string          `yaml:"cap-add,omitempty"`
	Binds       []string          `yaml:"binds,omitempty"`
	Ports       []string          `yaml:"ports,omitempty"`
	Sysctls     map[string]string `yaml:"sysctls,omitempty"`
	Exec        []string          `yaml:"exec,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
}

// clabLink is a link in containerlab's brief form, the one clabernetes reads.
type clabLink struct {
	Endpoints []string `yaml:"endpoints,flow"`
	MTU       int      `yaml:"mtu,omitempty"`
}

// containerlab returns the containerlab topology file of plan p and each
// switch's gswitchd config for it.
func containerlab(t *topo.Topology, p *topo.Plan, o exportOptions) ([]byte, map[string][]byte, error) {
	unprivileged := false
	labels := func(role, name string) map[string]string {
		l := map[string]string{"gswitch.topology": t.Name, "gswitch.role": role, "gswitch." + role: name}
		if p.Design != "" {
			l["gswitch.design"] = p.Design
		}
		return l
	}
	nodes := &yaml.Node{Kind: yaml.MappingNode}
	add := func(name string, n clabNode) error {
		var v yaml.Node
		if err := v.Encode(n); err != nil {
			return err
		}
		nodes.Content = append(nodes.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, &v)
		return nil
	}
	// The containers' interfaces: a switch's ports are eth1..ethN in
	// port order, a host's link is eth1.
	iface := map[string]string{}
	configs := map[string][]byte{}
	for _, sp := range p.Switches {
		for i, port := range sp.Ports {
			iface[port.Interface] = fmt.Sprintf("eth%d", i+1)
		}
		cfg, err := switchConfig(t, sp, iface)
		if err != nil {
			return nil, nil, err
		}
		configs[sp.Name] = cfg
		c, err := config.Parse(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("switches.%s: gswitchd would refuse its exported config: %w", sp.Name, err)
		}
		n := clabNode{Kind: "linux", Image: o.Image, Privileged: &unprivileged, CapAdd: append([]string(nil), switchCaps...),
			Binds: []string{exportConfigDir + "/" + sp.Name + ".yaml:/etc/gswitch/gswitchd.yaml:ro"},
			// IPv6 off on the ports (links are made after the container,
			// so default's value is theirs): the kernel must not send on them.
			Sysctls: map[string]string{"net.ipv6.conf.default.disable_ipv6": "1"},
			Labels:  labels("switch", sp.Name)}
		if c.Realtime > 0 || c.Nice < 0 {
			n.CapAdd = append(n.CapAdd, "SYS_NICE")
		}
		if c.Metrics != "off" {
			_, port, err := net.SplitHostPort(sp.Metrics)
			if err != nil {
				return nil, nil, fmt.Errorf("switches.%s: metrics %q: %w", sp.Name, sp.Metrics, err)
			}
			n.Ports = []string{fmt.Sprintf("%s:%d/tcp", port, exportMetricsPort)}
			n.Labels["gswitch.metrics"] = fmt.Sprint(exportMetricsPort)
		}
		if err := add(sp.Name, n); err != nil {
			return nil, nil, err
		}
	}
	for _, h := range p.Hosts {
		sysctls := map[string]string{"net.ipv6.conf.default.disable_ipv6": "1"}
		if h.CC != "" {
			sysctls["net.ipv4.tcp_congestion_control"] = h.CC
		}
		n := clabNode{Kind: "linux", Image: o.HostImage, NetworkMode: "none", Privileged: &unprivileged,
			CapAdd: []string{"NET_ADMIN"}, Sysctls: sysctls, Exec: hostExec(h), Labels: labels("host", h.Name)}
		if err := add(h.Name, n); err != nil {
			return nil, nil, err
		}
	}
	var links []clabLink
	for _, v := range p.Veths {
		end := func(e topo.VethEnd) string {
			if e.Namespace != "" {
				return e.Node + ":eth1"
			}
			return e.Node + ":" + iface[e.Name]
		}
		// The link's MTU is the switch end's (a host may set its own).
		mtu := v.A.MTU
		if v.A.Namespace != "" {
			mtu = v.B.MTU
		}
		links = append(links, clabLink{Endpoints: []string{end(v.A), end(v.B)}, MTU: mtu})
	}
	var linksNode yaml.Node
	if err := linksNode.Encode(links); err != nil {
		return nil, nil, err
	}
	topology := &yaml.Node{Kind: yaml.MappingNode}
	set := func(m *yaml.Node, k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	set(topology, "nodes", nodes)
	set(topology, "links", &linksNode)
	root := &yaml.Node{Kind: yaml.MappingNode}
	set(root, "name", &yaml.Node{Kind: yaml.ScalarNode, Value: t.Name})
	set(root, "topology", topology)
	body, err := encodeYAML(root)
	if err != nil {
		return nil, nil, err
	}
	return append([]byte(labHeader(t, p, o)), body...), configs, nil
}

// labHeader is the containerlab file's opening comment.
func labHeader(t *topo.Topology, p *topo.Plan, o exportOptions) string {
	under := ""
	if p.Design != "" {
		under = ", design " + p.Design
	}
	return fmt.Sprintf(`# containerlab topology of gswitch topology %s (%s%s), generated by
# gswitchctl topo export: edit the topology file and export again.
# Switches: image %s (scripts/image.sh), each with its gswitchd config
# %s/SWITCH.yaml at /etc/gswitch/gswitchd.yaml, its ports on eth1..ethN,
# metrics on :%d published on the topology's metrics ports (ports:).
# Hosts: image %s, set up by exec (address, MAC, MTU, routes,
# the gateway's MAC) as gswitchctl topo up sets a host's namespace up.
`, t.Name, fileName(t), under, o.Image, exportConfigDir, exportMetricsPort, o.HostImage)
}

// fileName is the topology file's name without its directory (the same
// wherever the export runs).
func fileName(t *topo.Topology) string {
	if t.File == "" {
		return "a topology file"
	}
	return filepath.Base(t.File)
}

// switchConfig is switch sp's gswitchd config as topo writes it, with the
// ports on the container's interfaces (iface) and the metrics on
// :exportMetricsPort.
func switchConfig(t *topo.Topology, sp *topo.SwitchPlan, iface map[string]string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(sp.Config, &doc); err != nil {
		return nil, fmt.Errorf("switches.%s: its config: %w", sp.Name, err)
	}
	// topo's own opening comment goes: this file has its own.
	root := doc.Content[0]
	doc.HeadComment, root.HeadComment = "", ""
	if len(root.Content) > 0 {
		root.Content[0].HeadComment = ""
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, root.Content[i+1]
		switch {
		case k == "metrics" && v.Value != "off":
			v.Value = fmt.Sprintf("0.0.0.0:%d", exportMetricsPort)
		case k == "ports":
			for _, port := range v.Content {
				for j := 0; j+1 < len(port.Content); j += 2 {
					if port.Content[j].Value == "interface" {
						name := port.Content[j+1].Value
						if iface[name] == "" {
							return nil, fmt.Errorf("switches.%s: port interface %s is not in the plan", sp.Name, name)
						}
						port.Content[j+1].Value = iface[name]
					}
				}
			}
		}
	}
	body, err := encodeYAML(&doc)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# gswitchd config of switch %s of topology %s, generated from %s by\n# gswitchctl topo export: its ports on the container's eth1..ethN, metrics on :%d.\n",
		sp.Name, t.Name, fileName(t), exportMetricsPort)
	return append([]byte(head), body...), nil
}

// hostExec are the commands that set a host's container up as topo up
// sets its namespace up: MAC and MTU, address, the gateway's MAC (static),
// routes to the other hosts' subnets with the host's TCP timers.
// containerlab has already turned checksum offload off on the veth.
func hostExec(h *topo.HostPlan) []string {
	cmds := []string{
		"ip link set eth1 down",
		fmt.Sprintf("ip link set eth1 address %s mtu %d", h.MAC, h.MTU),
		"ip link set eth1 up",
		fmt.Sprintf("ip addr add %s dev eth1", h.Addr),
	}
	timers := ""
	if h.RtoMin != 0 {
		timers += fmt.Sprintf(" rto_min lock %dms", h.RtoMin.Milliseconds())
	}
	if h.QuickAck {
		timers += " quickack 1"
	}
	if h.Gateway.IsValid() {
		cmds = append(cmds, fmt.Sprintf("ip neigh replace %s lladdr %s dev eth1 nud permanent", h.Gateway, h.GatewayMAC))
	}
	for _, r := range h.Routes {
		cmds = append(cmds, fmt.Sprintf("ip route add %s via %s dev eth1%s", r.Prefix, r.Via[0], timers))
	}
	if timers != "" {
		cmds = append(cmds, fmt.Sprintf("ip route replace %s dev eth1 proto kernel scope link src %s%s", h.Addr.Masked(), h.Addr.Addr(), timers))
	}
	return cmds
}

// encodeYAML writes n with two-space indents.
func encodeYAML(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// clabernetes returns a Kubernetes manifest: the namespace, a ConfigMap
// with every switch's config, and the clabernetes Topology that runs the
// containerlab file lab, mounting each config where the file binds it and
// exposing each switch's metrics port (ClusterIP) for Prometheus.
func clabernetes(t *topo.Topology, p *topo.Plan, o exportOptions, lab []byte, configs map[string][]byte) ([]byte, error) {
	cmName := t.Name + "-" + exportConfigDir
	labels := omap("gswitch/topology", t.Name)
	literal := func(s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: s}
	}
	data, files := omap(), omap()
	for _, sp := range p.Switches {
		key := sp.Name + ".yaml"
		data.Content = append(data.Content, str(key), literal(string(configs[sp.Name])))
		entry := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
			omap("filePath", exportConfigDir+"/"+key, "configMapName", cmName, "configMapPath", key, "mode", "read")}}
		files.Content = append(files.Content, str(sp.Name), entry)
	}
	docs := []*yaml.Node{
		omap("apiVersion", "v1", "kind", "Namespace", "metadata", omap("name", o.Namespace)),
		omap("apiVersion", "v1", "kind", "ConfigMap",
			"metadata", omap("name", cmName, "namespace", o.Namespace, "labels", labels), "data", data),
		omap("apiVersion", "clabernetes.containerlab.dev/v1alpha1", "kind", "Topology",
			"metadata", omap("name", t.Name, "namespace", o.Namespace, "labels", labels),
			"spec", omap(
				"connectivity", "vxlan",
				"naming", "prefixed",
				"definition", omap("containerlab", literal(string(lab))),
				"expose", omap("exposeType", "ClusterIP", "disableAutoExpose", true),
				"deployment", omap("filesFromConfigMap", files))),
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `# gswitch topology %s (%s) on Kubernetes through clabernetes, generated by
# gswitchctl topo export -format clabernetes: the namespace, the switches'
# gswitchd configs (ConfigMap) and the clabernetes Topology wrapping the
# containerlab file (one launcher pod per node, links as VXLAN between
# them; each switch's metrics port exposed as a ClusterIP service).
# kubectl apply -f this file; deploy/k8s/README.md has the steps.
`, t.Name, fileName(t))
	for _, d := range docs {
		body, err := encodeYAML(d)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(body)
	}
	return b.Bytes(), nil
}

// str is a YAML string scalar.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// omap is a YAML mapping of the key-value pairs kv in their order; a value
// is a *yaml.Node, a string or a bool.
func omap(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		var v *yaml.Node
		switch x := kv[i+1].(type) {
		case *yaml.Node:
			v = x
		case string:
			v = str(x)
		case bool:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(x)}
		default:
			panic(fmt.Sprintf("omap: %T", x))
		}
		m.Content = append(m.Content, str(kv[i].(string)), v)
	}
	return m
}
