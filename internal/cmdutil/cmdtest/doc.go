// Package cmdtest points a command's options and sessions at a fakecluster.Cluster, for the
// tests of the commands.
package cmdtest
