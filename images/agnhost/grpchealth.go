package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcHealthCheckingCommand serves grpc.health.v1 Health on --port (the GRPC probe tests'
// target), SERVING for --service until /make-not-serving on --http-port (or
// --delay-unhealthy-sec), as upstream's agnhost grpc-health-checking.
func grpcHealthCheckingCommand() *cobra.Command {
	var port, httpPort, delayUnhealthy int
	var service string
	cmd := &cobra.Command{
		Use:   "grpc-health-checking",
		Short: "Serves gRPC health checks on --port, switched by /make-serving and /make-not-serving on --http-port",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			status := health.NewServer()
			status.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
			if delayUnhealthy > 0 {
				time.AfterFunc(time.Duration(delayUnhealthy)*time.Second, func() {
					status.SetServingStatus(service, healthpb.HealthCheckResponse_NOT_SERVING)
				})
			}
			mux := http.NewServeMux()
			mux.HandleFunc("/make-serving", func(w http.ResponseWriter, _ *http.Request) {
				status.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
			})
			mux.HandleFunc("/make-not-serving", func(w http.ResponseWriter, _ *http.Request) {
				status.SetServingStatus(service, healthpb.HealthCheckResponse_NOT_SERVING)
			})
			l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
			if err != nil {
				return err
			}
			server := grpc.NewServer()
			healthpb.RegisterHealthServer(server, status)
			errs := make(chan error, 2)
			go func() { errs <- server.Serve(l) }()
			go func() { errs <- http.ListenAndServe(fmt.Sprintf(":%d", httpPort), mux) }()
			return <-errs
		},
	}
	cmd.Flags().IntVar(&port, "port", 5000, "port of the gRPC health service")
	cmd.Flags().IntVar(&httpPort, "http-port", 8080, "port of /make-serving and /make-not-serving")
	cmd.Flags().IntVar(&delayUnhealthy, "delay-unhealthy-sec", -1, "seconds after which the service is NOT_SERVING (-1: never)")
	cmd.Flags().StringVar(&service, "service", "", "the service name whose status is served")
	return cmd
}
