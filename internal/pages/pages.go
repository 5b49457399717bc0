// Package pages maps in and gives back the memory under byte slices, where
// the platform lets a process ask: the broker's frame buffers and the log's
// chunks use it to pay for fresh memory in one system call instead of one
// page fault per page, and to return memory they no longer need.
//
// Both calls are advice: neither changes what a slice holds for the
// program (Release leaves zeros, which readers of released memory must not
// rely on either way), and both do nothing where the platform offers no
// such call.
package pages
