package podsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/runtime"
)

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msgFile, logFile := filepath.Join(dir, "0"), filepath.Join(dir, "0.log")
	w, err := crilog.Open(logFile, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		w.Write(crilog.Entry{Time: time.Now(), Stream: crilog.Stderr, Content: fmt.Appendf(nil, "log line %03d", i)})
	}
	w.Close()
	os.WriteFile(msgFile, nil, 0o666)
	fallback := &corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}
	readFile := &corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageReadFile}
	failed := runtime.Container{ExitCode: 1, LogPath: logFile, TerminationLog: msgFile}

	if got := terminationMessage(readFile, failed); got != "" {
		t.Errorf("ReadFile with an empty file: %q, want nothing", got)
	}
	got := terminationMessage(fallback, failed)
	if len(got) > fallbackLogBytes || !strings.HasSuffix(got, "log line 099\n") || strings.Contains(got, "log line 019\n") {
		t.Errorf("FallbackToLogsOnError: %d bytes ending %q, want at most %d bytes of the last 80 lines", len(got), got[max(0, len(got)-20):], fallbackLogBytes)
	}
	if got := terminationMessage(fallback, runtime.Container{LogPath: logFile, TerminationLog: msgFile}); got != "" {
		t.Errorf("FallbackToLogsOnError after success: %q, want nothing", got)
	}
	os.WriteFile(msgFile, []byte(strings.Repeat("m", maxTerminationMessage+10)), 0o666)
	if got := terminationMessage(fallback, failed); got != strings.Repeat("m", maxTerminationMessage) {
		t.Errorf("message file: %d bytes, want the first %d", len(got), maxTerminationMessage)
	}
}
