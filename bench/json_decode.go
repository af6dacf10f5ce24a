// json_decode.go - the Go side of bench/json_decode.c: what a Go CCM pays to
// decode one Node, the 12.4 KB Node of bench/testdata/node-12k.json, with
// encoding/json into a typed Node struct of the shape client-go decodes
// into (k8s.io/api/core/v1.Node, metav1.ObjectMeta, with FieldsV1, Time and
// Quantity unmarshalled as apimachinery does: FieldsV1 keeps its raw bytes,
// Time parses RFC 3339, Quantity parses its string). Standard library only,
// so Debian's golang-go builds it offline:
//
//	go run bench/json_decode.go [-file F] [-iterations N]
//
// Prints one JSON line like json_decode.c's. Not part of make check; method
// and figures in bench/RESULTS.md.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// Time is metav1.Time: RFC 3339 in a JSON string, null for the zero time.
type Time struct{ time.Time }

func (t *Time) UnmarshalJSON(data []byte) error {
	if len(data) == 4 && string(data) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil { // as metav1.Time does
		return err
	}
	pt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	t.Time = pt.Local()
	return nil
}

// FieldsV1 is metav1.FieldsV1: the managed fields kept as raw JSON.
type FieldsV1 struct{ Raw []byte }

func (f *FieldsV1) UnmarshalJSON(b []byte) error {
	if !bytes.Equal(b, []byte("null")) {
		f.Raw = append(f.Raw[0:0], b...)
	}
	return nil
}

// Quantity stands for resource.Quantity: a number with an optional SI or
// binary suffix, parsed from its string like ParseQuantity (reduced: an
// integer or decimal mantissa, then the suffix).
type Quantity struct {
	Value  int64
	Scale  int32
	Format string
}

var suffixes = map[string]int32{"": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
	"m": -3, "u": -6, "n": -9, "Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

func (q *Quantity) UnmarshalJSON(value []byte) error {
	l := len(value)
	if l == 4 && bytes.Equal(value, []byte("null")) {
		*q = Quantity{}
		return nil
	}
	if l >= 2 && value[0] == '"' && value[l-1] == '"' {
		value = value[1 : l-1]
	}
	s := strings.TrimSpace(string(value))
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '-' || s[i] == '+') {
		i++
	}
	scale, ok := suffixes[s[i:]]
	if !ok || i == 0 {
		return errors.New("quantities must match the regular expression")
	}
	mant := s[:i]
	if dot := strings.IndexByte(mant, '.'); dot >= 0 {
		scale -= int32(len(mant) - dot - 1)
		mant = mant[:dot] + mant[dot+1:]
	}
	v, err := strconv.ParseInt(mant, 10, 64)
	if err != nil {
		return err
	}
	*q = Quantity{Value: v, Scale: scale, Format: s[i:]}
	return nil
}

type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

type ManagedFieldsEntry struct {
	Manager     string    `json:"manager,omitempty"`
	Operation   string    `json:"operation,omitempty"`
	APIVersion  string    `json:"apiVersion,omitempty"`
	Time        *Time     `json:"time,omitempty"`
	FieldsType  string    `json:"fieldsType,omitempty"`
	FieldsV1    *FieldsV1 `json:"fieldsV1,omitempty"`
	Subresource string    `json:"subresource,omitempty"`
}

type ObjectMeta struct {
	Name                       string               `json:"name,omitempty"`
	GenerateName               string               `json:"generateName,omitempty"`
	Namespace                  string               `json:"namespace,omitempty"`
	SelfLink                   string               `json:"selfLink,omitempty"`
	UID                        string               `json:"uid,omitempty"`
	ResourceVersion            string               `json:"resourceVersion,omitempty"`
	Generation                 int64                `json:"generation,omitempty"`
	CreationTimestamp          Time                 `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          *Time                `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string    `json:"labels,omitempty"`
	Annotations                map[string]string    `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference     `json:"ownerReferences,omitempty"`
	Finalizers                 []string             `json:"finalizers,omitempty"`
	ManagedFields              []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

type Taint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded *Time  `json:"timeAdded,omitempty"`
}

type ConfigMapNodeConfigSource struct {
	Namespace        string `json:"namespace"`
	Name             string `json:"name"`
	UID              string `json:"uid,omitempty"`
	ResourceVersion  string `json:"resourceVersion,omitempty"`
	KubeletConfigKey string `json:"kubeletConfigKey"`
}

type NodeConfigSource struct {
	ConfigMap *ConfigMapNodeConfigSource `json:"configMap,omitempty"`
}

type NodeSpec struct {
	PodCIDR            string            `json:"podCIDR,omitempty"`
	PodCIDRs           []string          `json:"podCIDRs,omitempty"`
	ProviderID         string            `json:"providerID,omitempty"`
	Unschedulable      bool              `json:"unschedulable,omitempty"`
	Taints             []Taint           `json:"taints,omitempty"`
	ConfigSource       *NodeConfigSource `json:"configSource,omitempty"`
	DoNotUseExternalID string            `json:"externalID,omitempty"`
}

type ResourceList map[string]Quantity

type NodeCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastHeartbeatTime  Time   `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime Time   `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

type DaemonEndpoint struct {
	Port int32 `json:"Port"`
}

type NodeDaemonEndpoints struct {
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitempty"`
}

type NodeSystemInfo struct {
	MachineID               string `json:"machineID"`
	SystemUUID              string `json:"systemUUID"`
	BootID                  string `json:"bootID"`
	KernelVersion           string `json:"kernelVersion"`
	OSImage                 string `json:"osImage"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
	KubeletVersion          string `json:"kubeletVersion"`
	KubeProxyVersion        string `json:"kubeProxyVersion"`
	OperatingSystem         string `json:"operatingSystem"`
	Architecture            string `json:"architecture"`
}

type ContainerImage struct {
	Names     []string `json:"names"`
	SizeBytes int64    `json:"sizeBytes,omitempty"`
}

type AttachedVolume struct {
	Name       string `json:"name"`
	DevicePath string `json:"devicePath"`
}

type NodeStatus struct {
	Capacity        ResourceList        `json:"capacity,omitempty"`
	Allocatable     ResourceList        `json:"allocatable,omitempty"`
	Phase           string              `json:"phase,omitempty"`
	Conditions      []NodeCondition     `json:"conditions,omitempty"`
	Addresses       []NodeAddress       `json:"addresses,omitempty"`
	DaemonEndpoints NodeDaemonEndpoints `json:"daemonEndpoints,omitempty"`
	NodeInfo        NodeSystemInfo      `json:"nodeInfo,omitempty"`
	Images          []ContainerImage    `json:"images,omitempty"`
	VolumesInUse    []string            `json:"volumesInUse,omitempty"`
	VolumesAttached []AttachedVolume    `json:"volumesAttached,omitempty"`
}

type Node struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NodeSpec   `json:"spec,omitempty"`
	Status     NodeStatus `json:"status,omitempty"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func main() {
	file := flag.String("file", "bench/testdata/node-12k.json", "the Node's JSON")
	iterations := flag.Int("iterations", 20000, "decodes")
	flag.Parse()
	data, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "json_decode:", err)
		os.Exit(1)
	}
	data = bytes.TrimRight(data, "\r\n")
	decode := func() *Node {
		n := &Node{} // client-go decodes every event into a new object
		if err := json.Unmarshal(data, n); err != nil {
			fmt.Fprintln(os.Stderr, "json_decode:", err)
			os.Exit(1)
		}
		return n
	}
	if n := decode(); n.Name == "" || len(n.Status.Images) != 50 || len(n.ManagedFields) != 4 {
		fmt.Fprintln(os.Stderr, "json_decode: the document did not decode as expected")
		os.Exit(1)
	}
	for i := 0; i < *iterations/10+1; i++ { // warm up
		decode()
	}
	c0, t0 := cpuSeconds(), time.Now()
	for i := 0; i < *iterations; i++ {
		decode()
	}
	t := time.Since(t0).Seconds()
	c := cpuSeconds() - c0
	fmt.Printf("{\"step\":\"go-encoding-json\",\"bytes\":%d,\"iterations\":%d,\"us_per_decode\":%.2f,"+
		"\"mb_per_s\":%.1f,\"cpu_s\":%.3f,\"wall_s\":%.3f}\n", len(data), *iterations,
		t/float64(*iterations)*1e6, float64(len(data))*float64(*iterations)/t/1e6, c, t)
}
