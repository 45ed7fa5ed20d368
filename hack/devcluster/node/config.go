package node

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/hack/devcluster/addons"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// The node's three configurations are typed: the kubelet's with its own API
// type, containerd's and the CNI network's with structs that name only the
// keys set here. Each is a pure function of the Node.

// KubeletConfig is the kubelet's configuration on this machine: cgroupfs
// (no systemd as PID 1, v1 or hybrid cgroups), the node's own containerd,
// ports and cgroup root (two kubelets share the machine), no read-only or
// healthz port, and the egress taint from registration on.
func KubeletConfig(n Node) *kubeletv1beta1.KubeletConfiguration {
	return &kubeletv1beta1.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		FailCgroupV1:             ptr.To(false),
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               n.CgroupRoot(),
		ContainerRuntimeEndpoint: "unix://" + n.Socket(),
		Address:                  n.Gateway().String(),
		Port:                     int32(n.KubeletPort),
		ReadOnlyPort:             0,
		HealthzPort:              ptr.To[int32](0),
		// Reached from this machine only: the node's INPUT chain drops
		// Pods' packets to it.
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:  kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow},
		FailSwapOn:     ptr.To(false),
		MaxPods:        16,
		PodLogsDir:     n.path("pod-logs"),
		ResolverConfig: ptr.To(""),
		ClusterDNS:     []string{n.Network.DNSIP().String()},
		ClusterDomain:  addons.ClusterDomain,
		RegisterWithTaints: []corev1.Taint{{
			Key: egress.DefaultLabel, Value: egress.DefaultValue, Effect: corev1.TaintEffectNoSchedule,
		}},
		EvictionHard:                map[string]string{"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
		ImageGCHighThresholdPercent: ptr.To[int32](100),
		ImageGCLowThresholdPercent:  ptr.To[int32](99),
		ShutdownGracePeriod:         metav1.Duration{Duration: 0 * time.Second},
	}
}

// containerdConfig is containerd 1.6's configuration (version 2): the
// node's own root, state and socket, so that two containerds share the
// machine.
type containerdConfig struct {
	Version         int            `toml:"version"`
	Root            string         `toml:"root"`
	State           string         `toml:"state"`
	DisabledPlugins []string       `toml:"disabled_plugins"`
	GRPC            grpcConfig     `toml:"grpc"`
	Plugins         map[string]any `toml:"plugins"`
}

type grpcConfig struct {
	Address string `toml:"address"`
}

type optPlugin struct {
	Path string `toml:"path"`
}

type criPlugin struct {
	SandboxImage  string `toml:"sandbox_image"`
	EnableSELinux bool   `toml:"enable_selinux"`
	// Some machines give no CAP_SYS_RESOURCE: runc cannot set the
	// sandbox's oom_score_adj the kubelet asks (-998); clamp it to
	// containerd's own.
	RestrictOOMScoreAdj bool          `toml:"restrict_oom_score_adj"`
	Containerd          criContainerd `toml:"containerd"`
	CNI                 criCNI        `toml:"cni"`
}

type criContainerd struct {
	Snapshotter        string                `toml:"snapshotter"`
	DefaultRuntimeName string                `toml:"default_runtime_name"`
	Runtimes           map[string]criRuntime `toml:"runtimes"`
}

type criRuntime struct {
	RuntimeType string      `toml:"runtime_type"`
	Options     runcOptions `toml:"options"`
}

type runcOptions struct {
	SystemdCgroup bool   `toml:"SystemdCgroup"`
	Root          string `toml:"Root"`
}

type criCNI struct {
	BinDir     string `toml:"bin_dir"`
	ConfDir    string `toml:"conf_dir"`
	MaxConfNum int    `toml:"max_conf_num"`
}

// PauseImage is the Pods' sandbox image, built here (hack/image --addon pause).
const PauseImage = "localhost/crawl-operator-pause:dev"

// CNIBinDir holds Debian's containernetworking-plugins.
const CNIBinDir = "/usr/lib/cni"

// ContainerdConfig is the node's containerd configuration as TOML.
func ContainerdConfig(n Node) ([]byte, error) {
	c := containerdConfig{
		Version: 2,
		Root:    n.path("containerd", "root"),
		State:   n.path("containerd", "state"),
		DisabledPlugins: []string{"io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
			"io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"},
		GRPC: grpcConfig{Address: n.Socket()},
		Plugins: map[string]any{
			"io.containerd.internal.v1.opt": optPlugin{Path: n.path("containerd", "opt")},
			"io.containerd.grpc.v1.cri": criPlugin{
				SandboxImage:        PauseImage,
				RestrictOOMScoreAdj: true,
				Containerd: criContainerd{
					Snapshotter:        "overlayfs",
					DefaultRuntimeName: "runc",
					Runtimes: map[string]criRuntime{"runc": {
						RuntimeType: "io.containerd.runc.v2",
						Options:     runcOptions{Root: n.path("runc")},
					}},
				},
				CNI: criCNI{BinDir: CNIBinDir, ConfDir: n.path("cni", "net.d"), MaxConfNum: 1},
			},
		},
	}
	var b bytes.Buffer
	err := toml.NewEncoder(&b).Encode(c)
	return b.Bytes(), err
}

// cniConfList is a CNI network configuration list (spec 0.4.0).
type cniConfList struct {
	CNIVersion string         `json:"cniVersion"`
	Name       string         `json:"name"`
	Plugins    []bridgePlugin `json:"plugins"`
}

type bridgePlugin struct {
	Type             string    `json:"type"`
	Bridge           string    `json:"bridge"`
	IsGateway        bool      `json:"isGateway"`
	IsDefaultGateway bool      `json:"isDefaultGateway"`
	IPMasq           bool      `json:"ipMasq"`
	HairpinMode      bool      `json:"hairpinMode"`
	IPAM             hostLocal `json:"ipam"`
}

type hostLocal struct {
	Type    string          `json:"type"`
	Ranges  [][]ipamRange   `json:"ranges"`
	DataDir string          `json:"dataDir"`
	Routes  []ipamRouteDest `json:"routes"`
}

type ipamRange struct {
	Subnet  string `json:"subnet"`
	Gateway string `json:"gateway"`
}

type ipamRouteDest struct {
	Dst string `json:"dst"`
}

// CNIConfig is the node's Pod network: a bridge of its own with its Pod
// range, the bridge's address as the Pods' default gateway, and no
// masquerading by the plugin. What a Pod may reach through the gateway is
// the node's firewall's business (Firewall), and the address it leaves
// with the internet's (SNAT on the way into it).
func CNIConfig(n Node) ([]byte, error) {
	return json.MarshalIndent(cniConfList{
		CNIVersion: "0.4.0",
		Name:       n.CNINetwork(),
		Plugins: []bridgePlugin{{
			Type: "bridge", Bridge: n.Bridge, IsGateway: true,
			IPAM: hostLocal{
				Type:    "host-local",
				Ranges:  [][]ipamRange{{{Subnet: n.Subnet().String(), Gateway: n.Gateway().String()}}},
				DataDir: n.path("cni", "ipam"),
				Routes:  []ipamRouteDest{{Dst: "0.0.0.0/0"}},
			},
		}},
	}, "", "  ")
}

// kubeletYAML renders the kubelet's configuration file.
func kubeletYAML(n Node) ([]byte, error) {
	return yaml.Marshal(KubeletConfig(n))
}
