package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// newFileContent is what mounttest writes into --new_file_* and waits for in
// --file_content_in_loop; the volume tests compare against it.
const newFileContent = "mount-tester new file\n"

// mounttestCommand prints facts about paths in the volume tests' exact words ("mode of
// file \"/x\": -rw-r--r--"), which the tests match in the container's log. Every flag
// given is acted on; any failure makes the exit status 1.
func mounttestCommand() *cobra.Command {
	var fsType, fileMode, filePerm, fileOwner, content, contentInLoop string
	newFiles := map[os.FileMode]*string{0o644: new(string), 0o666: new(string), 0o660: new(string), 0o777: new(string)}
	retrySeconds, breakOnExpected := 180, true
	cmd := &cobra.Command{
		Use:   "mounttest",
		Short: "Prints file system type, modes, owners and contents of paths",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			unix.Umask(0)
			failed := false
			check := func(err error) { failed = failed || err != nil }
			if fsType != "" {
				check(printFsType(fsType))
			}
			for _, perm := range []os.FileMode{0o644, 0o666, 0o660, 0o777} {
				if path := *newFiles[perm]; path != "" {
					check(writeNewFile(path, perm))
				}
			}
			if fileMode != "" {
				check(printStat(fileMode, func(fi os.FileInfo) string { return fmt.Sprintf("mode of file %q: %v", fileMode, fi.Mode()) }))
			}
			if filePerm != "" {
				check(printStat(filePerm, func(fi os.FileInfo) string { return fmt.Sprintf("perms of file %q: %v", filePerm, fi.Mode().Perm()) }))
			}
			if fileOwner != "" {
				check(printStat(fileOwner, func(fi os.FileInfo) string {
					st := fi.Sys().(*syscall.Stat_t)
					return fmt.Sprintf("owner UID of %q: %v\nowner GID of %q: %v", fileOwner, st.Uid, fileOwner, st.Gid)
				}))
			}
			if content != "" {
				check(printContent(content))
			}
			if contentInLoop != "" {
				check(printContentInLoop(contentInLoop, time.Duration(retrySeconds)*time.Second, breakOnExpected))
			}
			if failed {
				os.Exit(1)
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&fsType, "fs_type", "", "path to print the file system type of")
	f.StringVar(&fileMode, "file_mode", "", "path to print the mode of")
	f.StringVar(&filePerm, "file_perm", "", "path to print the permission bits of")
	f.StringVar(&fileOwner, "file_owner", "", "path to print the owning UID and GID of")
	for _, perm := range []os.FileMode{0o644, 0o666, 0o660, 0o777} {
		f.StringVar(newFiles[perm], fmt.Sprintf("new_file_%04o", perm), "", fmt.Sprintf("path to write with permissions %04o and read back", perm))
	}
	f.StringVar(&content, "file_content", "", "path to print the content of")
	f.StringVar(&contentInLoop, "file_content_in_loop", "", "path to print the content of every 2 s")
	f.IntVar(&retrySeconds, "retry_time", retrySeconds, "seconds --file_content_in_loop keeps reading")
	f.BoolVar(&breakOnExpected, "break_on_expected_content", breakOnExpected, "stop --file_content_in_loop once the file holds what --new_file_* writes")
	return cmd
}

func printFsType(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		fmt.Printf("error from statfs(%q): %v\n", path, err)
		return err
	}
	name := strconv.FormatInt(int64(st.Type), 10)
	if st.Type == unix.TMPFS_MAGIC {
		name = "tmpfs"
	}
	fmt.Printf("mount type of %q: %s\n", path, name)
	return nil
}

func printStat(path string, line func(os.FileInfo) string) error {
	fi, err := os.Stat(path)
	if err != nil {
		fmt.Printf("error from Stat(%q): %v\n", path, err)
		return err
	}
	fmt.Println(line(fi))
	return nil
}

func writeNewFile(path string, perm os.FileMode) error {
	if err := os.WriteFile(path, []byte(newFileContent), perm); err != nil {
		fmt.Printf("error writing new file %q: %v\n", path, err)
		return err
	}
	return printContent(path)
}

func printContent(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Printf("error reading file content for %q: %v\n", path, err)
		return err
	}
	fmt.Printf("content of file %q: %v\n", path, string(data))
	return nil
}

// printContentInLoop reads path every 2 s for at most retry, stopping early once it holds
// newFileContent when breakOnExpected is set; the last read error is the result.
func printContentInLoop(path string, retry time.Duration, breakOnExpected bool) error {
	var err error
	for start := time.Now(); time.Since(start) < retry; time.Sleep(2 * time.Second) {
		var data []byte
		if data, err = os.ReadFile(path); err != nil {
			fmt.Printf("Error reading file %s: %v, retrying\n", path, err)
			continue
		}
		fmt.Printf("content of file %q: %v\n", path, string(data))
		if !breakOnExpected {
			continue
		}
		if string(data) == newFileContent {
			return nil
		}
		fmt.Printf("Unexpected content. Expected: %s. Retrying\n", newFileContent)
	}
	return err
}
