// Command build writes the project's images as OCI tarballs (pause.tar, netexec.tar,
// busybox.tar) and copies pause.tar to where minilet embeds it. Run it from inside the
// repository: go run ./images/build -o images/out
package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/pkg/runtime/pauseimage"
	"github.com/spf13/pflag"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("building images failed", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	opts := images.Options{Log: log}
	var pauseEmbed string
	flags := pflag.NewFlagSet("build", pflag.ExitOnError)
	flags.StringVarP(&opts.OutDir, "out", "o", "images/out", "directory for the image tarballs")
	flags.StringVar(&opts.Busybox, "busybox", images.DefaultBusybox, "statically linked busybox copied into the images")
	flags.StringVar(&opts.BashStatic, "bash-static", images.DefaultBashStatic, "statically linked bash, /bin/sh of every image with busybox")
	flags.StringVar(&pauseEmbed, "pause-embed", "", "where to copy pause.tar for minilet to embed (default: pkg/runtime/pauseimage/assets/ of this module; \"-\" skips the copy)")
	if err := flags.Parse(os.Args[1:]); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if pauseEmbed == "" {
		root, err := moduleRoot(ctx)
		if err != nil {
			return err
		}
		pauseEmbed = filepath.Join(root, "pkg", "runtime", "pauseimage", "assets", pauseimage.TarballName)
	}
	if err := images.Build(ctx, opts); err != nil {
		return err
	}
	if pauseEmbed == "-" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(opts.OutDir, images.Tarballs[images.PauseRef]))
	if err != nil {
		return err
	}
	if err := os.WriteFile(pauseEmbed, data, 0o644); err != nil {
		return fmt.Errorf("copying the pause image for embedding: %w", err)
	}
	log.Info("copied pause image for embedding", "file", pauseEmbed)
	return nil
}

// moduleRoot is the directory of the go.mod the go command sees from here.
func moduleRoot(ctx context.Context) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run the images builder inside the minik8s repository (no go.mod found from here)")
	}
	return filepath.Dir(gomod), nil
}
