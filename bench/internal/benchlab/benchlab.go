// Package benchlab brings up the one-node minilab the node benchmarks measure.
package benchlab

import (
	"context"
	"fmt"
	"os"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// Up brings up a one-node lab named after tool and this process, from the daemons in bin
// and the image tarballs in images. down takes it away again, saying on stderr when it
// cannot.
func Up(ctx context.Context, tool, bin, images string) (l *lab.Lab, down func(), err error) {
	name := fmt.Sprintf("%s-%d", tool, os.Getpid()%10000)
	fmt.Printf("%s: bringing up lab %s (1 node)\n", tool, name)
	l, err = cluster.Up(ctx, cluster.Options{Name: name, Nodes: 1, BinDir: bin, ImagesDir: images, Progress: os.Stdout})
	if err != nil {
		return nil, nil, err
	}
	return l, func() {
		if err := cluster.Down(context.Background(), name); err != nil {
			fmt.Fprintf(os.Stderr, "%s: lab down: %v\n", tool, err)
		}
	}, nil
}
