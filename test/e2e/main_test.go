// Package e2e runs end-to-end scenarios on a minilab cluster: real miniapi, minilet,
// containerd, CNI plugins and network namespaces. Every request to a lab address is made
// from inside a lab namespace; nothing routes from the host into the lab.
package e2e
