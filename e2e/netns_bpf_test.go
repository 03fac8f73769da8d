//go:build e2e

package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Random packet loss without netem: a ten-instruction eBPF classifier in
// direct-action mode on a clsact egress hook. Many minimal kernels (this
// project's CI VM among them) ship cls_bpf but not sch_netem, and the
// classifier spares ARP, which netem would drop too.

// bpfInsn is struct bpf_insn.
type bpfInsn struct {
	Op   uint8
	Regs uint8 // dst register in the low nibble, src in the high one
	Off  int16
	Imm  int32
}

const (
	bpfFuncGetPrandomU32 = 7  // BPF_FUNC_get_prandom_u32
	bpfSkbProtocolOff    = 16 // offsetof(struct __sk_buff, protocol)
	tcActUnspec          = -1 // TC_ACT_UNSPEC: go on with the next filter
	tcActShot            = 2  // TC_ACT_SHOT: drop
	bpfLossFilterPref    = "7"
)

// lossProgram returns a tc classifier that drops each IPv4 and IPv6
// packet with probability percent/100 and lets everything else through.
func lossProgram(percent float64) []bpfInsn {
	// skb->protocol holds the EtherType in network order.
	ipv4 := int32(binary.NativeEndian.Uint16([]byte{0x08, 0x00}))
	ipv6 := int32(binary.NativeEndian.Uint16([]byte{0x86, 0xdd}))
	threshold := uint32(min(math.Round(percent/100*(1<<32)), math.MaxUint32))
	return []bpfInsn{
		// r2 = skb->protocol
		{Op: unix.BPF_LDX | unix.BPF_MEM | unix.BPF_W, Regs: 2 | 1<<4, Off: bpfSkbProtocolOff},
		// IPv4 or IPv6: go to the draw; anything else (ARP): pass
		{Op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Regs: 2, Off: 2, Imm: ipv4},
		{Op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Regs: 2, Off: 1, Imm: ipv6},
		{Op: unix.BPF_JMP | unix.BPF_JA, Off: 4},
		// r0 = a random u32; if w0 >= threshold: pass
		{Op: unix.BPF_JMP | unix.BPF_CALL, Imm: bpfFuncGetPrandomU32},
		{Op: unix.BPF_JMP32 | unix.BPF_JGE | unix.BPF_K, Regs: 0, Off: 2, Imm: int32(threshold)},
		// drop
		{Op: unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K, Regs: 0, Imm: tcActShot},
		{Op: unix.BPF_JMP | unix.BPF_EXIT},
		// pass
		{Op: unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K, Regs: 0, Imm: tcActUnspec},
		{Op: unix.BPF_JMP | unix.BPF_EXIT},
	}
}

// bpfProgLoadAttr is the BPF_PROG_LOAD part of union bpf_attr. Pointers
// are unsafe.Pointer so the collector sees them; the layout matches the
// kernel's __aligned_u64 fields on 64-bit platforms only.
type bpfProgLoadAttr struct {
	ProgType    uint32
	InsnCnt     uint32
	Insns       unsafe.Pointer
	License     unsafe.Pointer
	LogLevel    uint32
	LogSize     uint32
	LogBuf      unsafe.Pointer
	KernVersion uint32
	ProgFlags   uint32
}

// bpfObjPinAttr is the BPF_OBJ_PIN part of union bpf_attr.
type bpfObjPinAttr struct {
	Pathname  unsafe.Pointer
	BpfFd     uint32
	FileFlags uint32
}

// loadBPFClassifier loads insns as a BPF_PROG_TYPE_SCHED_CLS program and
// returns its fd; on rejection the error carries the verifier's log.
func loadBPFClassifier(insns []bpfInsn) (int, error) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return -1, errors.New("bpf: needs a 64-bit platform")
	}
	license := []byte("GPL\x00")
	log := make([]byte, 1<<16)
	attr := bpfProgLoadAttr{
		ProgType: unix.BPF_PROG_TYPE_SCHED_CLS,
		InsnCnt:  uint32(len(insns)),
		Insns:    unsafe.Pointer(&insns[0]),
		License:  unsafe.Pointer(&license[0]),
		LogLevel: 1,
		LogSize:  uint32(len(log)),
		LogBuf:   unsafe.Pointer(&log[0]),
	}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	if errno != 0 {
		return -1, fmt.Errorf("bpf: load classifier: %w: %s", errno, strings.TrimRight(string(log), "\x00"))
	}
	return int(fd), nil
}

// pinBPF pins the object fd at path, which must be on a bpf filesystem.
func pinBPF(fd int, path string) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := bpfObjPinAttr{Pathname: unsafe.Pointer(p), BpfFd: uint32(fd)}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_PIN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(p)
	if errno != 0 {
		return fmt.Errorf("bpf: pin %s: %w", path, errno)
	}
	return nil
}

// netnsHelperBPFLoss attaches lossProgram(percent) to the egress of dev in the
// current namespace, replacing any earlier one. tc takes programs by
// bpffs path, so the program is pinned on a bpffs mounted for the
// occasion; it must run in a private mount namespace (`ip netns exec`
// makes one), so the mount is never seen outside and dies with it.
func netnsHelperBPFLoss(dev string, percent float64) (err error) {
	if out, err := exec.Command("tc", "qdisc", "replace", "dev", dev, "clsact").CombinedOutput(); err != nil {
		return fmt.Errorf("tc qdisc replace dev %s clsact: %w: %s", dev, err, out)
	}
	fd, err := loadBPFClassifier(lossProgram(percent))
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	dir, err := os.MkdirTemp("", "mrdl-bpf-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		return fmt.Errorf("mount bpffs on %s: %w", dir, err)
	}
	defer func() { err = errors.Join(err, unix.Unmount(dir, unix.MNT_DETACH)) }()
	pin := filepath.Join(dir, "loss")
	if err := pinBPF(fd, pin); err != nil {
		return err
	}
	args := []string{"filter", "replace", "dev", dev, "egress", "pref", bpfLossFilterPref, "handle", "1",
		"bpf", "direct-action", "object-pinned", pin}
	if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
