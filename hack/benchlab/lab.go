package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// namespace holds the benchmark's pods; it is deleted at the end.
const namespace = "netbench-benchlab"

// workloads: the server app on serverNode, listening on appPort, and one client pod per path, all
// plain lab sample apps under the restricted Pod Security profile, as users' apps would be.
const workloads = `apiVersion: v1
kind: Namespace
metadata: {name: netbench-benchlab}
---
apiVersion: v1
kind: Pod
metadata: {name: srv, namespace: netbench-benchlab}
spec: {nodeName: SRVNODE, containers: [{name: app, image: "netbench.lab/sample-app:1", args: ["-http", ":APPPORT"], ports: [{containerPort: APPPORT}], securityContext: SC}]}
---
apiVersion: v1
kind: Pod
metadata: {name: cli-same-node, namespace: netbench-benchlab}
spec: {nodeName: lab-b1, containers: [{name: app, image: "netbench.lab/sample-app:1", securityContext: SC}]}
---
apiVersion: v1
kind: Pod
metadata: {name: cli-same-zone, namespace: netbench-benchlab}
spec: {nodeName: lab-b2, containers: [{name: app, image: "netbench.lab/sample-app:1", securityContext: SC}]}
---
apiVersion: v1
kind: Pod
metadata: {name: cli-cross-zone, namespace: netbench-benchlab}
spec: {nodeName: lab-a1, containers: [{name: app, image: "netbench.lab/sample-app:1", securityContext: SC}]}
`

const restricted = `{runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}`

type lab struct {
	kubectl string
	ips     map[string]string // pod → IP
	nodes   int               // the lab's nodes, all sharing the machine's cores
}

func (l *lab) k(args ...string) ([]byte, error) {
	cmd := exec.Command(l.kubectl, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

func (l *lab) setup() error {
	cmd := exec.Command(l.kubectl, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.NewReplacer("SC", restricted, "SRVNODE", serverNode, "APPPORT", strconv.Itoa(appPort)).Replace(workloads))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w: %s", err, out)
	}
	if _, err := l.k("-n", namespace, "wait", "--for=condition=Ready", "pod", "--all", "--timeout=180s"); err != nil {
		return err
	}
	out, err := l.k("-n", namespace, "get", "pods", "-o", "json")
	if err != nil {
		return err
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				PodIP string `json:"podIP"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return fmt.Errorf("the pods' list: %w", err)
	}
	l.ips = map[string]string{}
	for _, p := range list.Items {
		l.ips[p.Metadata.Name] = p.Status.PodIP
	}
	nodes, err := l.k("get", "nodes", "-o", "name")
	if err != nil {
		return err
	}
	l.nodes = len(strings.Fields(string(nodes)))
	return nil
}

func (l *lab) teardown() {
	_, _ = l.k("delete", "namespace", namespace, "--ignore-not-found", "--timeout=120s")
}
