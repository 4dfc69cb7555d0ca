package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// phpPeer is the PHP SoapServer adapter (bench/peers/php) under php-fpm
// with a static pool behind nginx: /fast/ talks to the sandbox directly,
// /slow/ through the delaying proxy.
type phpPeer struct {
	url   string // http://127.0.0.1:port
	fpm   *child
	nginx *child
}

// findTool looks a server binary up in PATH and the sbin directories
// (Debian puts php-fpm8.2 and nginx there, often outside a user's PATH).
func findTool(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
			if p := filepath.Join(d, n); isExec(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found (bench/peers/php/install-deps installs it)", names[0])
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// phpTools finds php-fpm and nginx and checks the PHP extensions the
// adapter needs; the error names what is missing.
func phpTools() (fpm, nginx string, err error) {
	fpm, err = findTool("php-fpm", "php-fpm8.4", "php-fpm8.3", "php-fpm8.2")
	if err != nil {
		return "", "", err
	}
	nginx, err = findTool("nginx")
	if err != nil {
		return "", "", err
	}
	out, err := exec.Command(fpm, "-m").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s -m: %w", fpm, err)
	}
	mods := strings.ToLower(string(out))
	for _, m := range []string{"soap", "apcu", "curl", "openssl"} {
		if !regexp.MustCompile(`(?m)^` + m + `$`).MatchString(mods) {
			return "", "", fmt.Errorf("php-fpm lacks the %s extension (bench/peers/php/install-deps installs it)", m)
		}
	}
	return fpm, nginx, nil
}

type phpGateway struct{ name, url string }

// startPHP writes the php-fpm and nginx configurations into dir and starts
// both. workers is the static pool size.
func startPHP(dir, adapter, wsdl string, workers int, gateways []phpGateway, m merchantCreds) (*phpPeer, error) {
	fpmBin, nginxBin, err := phpTools()
	if err != nil {
		return nil, err
	}
	root := os.Getuid() == 0
	sock := filepath.Join(dir, "php-fpm.sock")
	var fpmConf strings.Builder
	// error_log on stderr: the ready notice lands in the child's log file.
	fmt.Fprintf(&fpmConf, "[global]\npid = %s\nerror_log = /proc/self/fd/2\ndaemonize = no\n\n[bench]\n",
		filepath.Join(dir, "php-fpm.pid"))
	if root {
		fpmConf.WriteString("user = root\ngroup = root\n")
	}
	fmt.Fprintf(&fpmConf, "listen = %s\nlisten.mode = 0666\nlisten.backlog = 4096\npm = static\npm.max_children = %d\n"+
		"pm.max_requests = 0\ncatch_workers_output = yes\n", sock, workers)
	fpmPath := filepath.Join(dir, "php-fpm.conf")
	if err := os.WriteFile(fpmPath, []byte(fpmConf.String()), 0o644); err != nil {
		return nil, err
	}
	argv := []string{fpmBin, "--nodaemonize", "--fpm-config", fpmPath}
	if root {
		argv = append(argv, "--allow-to-run-as-root")
	}
	fpm, _, err := startChild(dir, "php-fpm", argv, nil, regexp.MustCompile(`ready to handle connections()`), 20*time.Second)
	if err != nil {
		return nil, err
	}

	port, err := freePort()
	if err != nil {
		fpm.stop()
		return nil, err
	}
	var locs strings.Builder
	for _, g := range gateways {
		fmt.Fprintf(&locs, `
    location /%s/ {
      include %s;
      fastcgi_param SCRIPT_FILENAME %s;
      fastcgi_param GATEWAY_URL %s;
      fastcgi_param GOID %d;
      fastcgi_param CLIENT_ID %s;
      fastcgi_param CLIENT_SECRET %s;
      fastcgi_param SECURE_KEY %s;
      fastcgi_param WSDL %s;
      fastcgi_pass bench_fpm;
    }`, g.name, nginxFastCGIParams(nginxBin), adapter, g.url, m.goid, m.clientID, m.clientSecret, m.secureKey, wsdl)
	}
	user := ""
	if root {
		user = "user root;\n"
	}
	conf := fmt.Sprintf(`%sworker_processes auto;
pid %s;
error_log %s warn;
daemon off;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path %s;
  fastcgi_temp_path %s;
  proxy_temp_path %s;
  uwsgi_temp_path %s;
  scgi_temp_path %s;
  keepalive_requests 100000;
  # No keep-alive to php-fpm (Debian's default): a kept connection holds a
  # worker, so idle ones of one nginx worker would starve the others.
  upstream bench_fpm { server unix:%s; }
  server {
    listen 127.0.0.1:%d backlog=4096;%s
  }
}
`, user, filepath.Join(dir, "nginx.pid"), filepath.Join(dir, "nginx-error.log"),
		filepath.Join(dir, "nginx-body"), filepath.Join(dir, "nginx-fcgi"), filepath.Join(dir, "nginx-proxy"),
		filepath.Join(dir, "nginx-uwsgi"), filepath.Join(dir, "nginx-scgi"), sock, port, locs.String())
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		fpm.stop()
		return nil, err
	}
	ng, _, err := startChild(dir, "nginx", []string{nginxBin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "nginx-error.log")}, nil,
		regexp.MustCompile(`^()`), time.Second)
	if err != nil {
		fpm.stop()
		return nil, err
	}
	p := &phpPeer{url: "http://127.0.0.1:" + strconv.Itoa(port), fpm: fpm, nginx: ng}
	if err := waitListening("127.0.0.1:"+strconv.Itoa(port), ng, 10*time.Second); err != nil {
		p.stop()
		b, _ := os.ReadFile(filepath.Join(dir, "nginx-error.log"))
		return nil, fmt.Errorf("nginx: %w %s", err, tail(b))
	}
	return p, nil
}

func (p *phpPeer) stop() {
	if p == nil {
		return
	}
	p.nginx.stop()
	p.fpm.stop()
}

// nginxFastCGIParams is the fastcgi_params file next to nginx's default
// configuration.
func nginxFastCGIParams(nginxBin string) string {
	out, _ := exec.Command(nginxBin, "-V").CombinedOutput()
	if m := regexp.MustCompile(`--conf-path=(\S+)`).FindSubmatch(out); m != nil {
		return filepath.Join(filepath.Dir(string(m[1])), "fastcgi_params")
	}
	return "/etc/nginx/fastcgi_params"
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until addr accepts connections or c exits.
func waitListening(addr string, c *child, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("exited during start-up")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s within %s", addr, wait)
		}
	}
}
