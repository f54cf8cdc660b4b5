// Command apiprobe is the dev node's smallest in-cluster client, for tests: it calls the API server
// the way a Pod does — through the `kubernetes` Service ($KUBERNETES_SERVICE_HOST/_PORT), trusting
// the projected ca.crt, sending the projected ServiceAccount token — and prints the status code and
// the body. `apiprobe /version`; the exit code is 0 for a 2xx answer, 1 otherwise, 2 if no answer.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const secrets = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	if len(os.Args) != 2 || !strings.HasPrefix(os.Args[1], "/") {
		fmt.Fprintln(os.Stderr, "usage: apiprobe /api/path")
		os.Exit(2)
	}
	token, err := os.ReadFile(secrets + "token")
	fail(err)
	ca, err := os.ReadFile(secrets + "ca.crt")
	fail(err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		fail(fmt.Errorf("no certificate in %sca.crt", secrets))
	}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Proxy: nil},
	}
	request, err := http.NewRequest(http.MethodGet, "https://"+host+os.Args[1], nil)
	fail(err)
	request.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	response, err := client.Do(request)
	fail(err)
	defer response.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(response.Body, 4096))
	fmt.Printf("%d\n%s\n", response.StatusCode, body)
	if response.StatusCode/100 != 2 {
		os.Exit(1)
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiprobe:", err)
		os.Exit(2)
	}
}
