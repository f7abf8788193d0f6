//go:build unix

package kinds

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"syscall"
)

// execCred is the user and groups a command runs as (ExecPolicy.User).
type execCred = syscall.Credential

// lookupExecUser returns the credentials of the user name (or numeric ID)
// for a process whose effective user ID is euid, and the user's HOME, USER
// and LOGNAME. The credentials are nil when the process already is that
// user; changing user needs root.
func lookupExecUser(name string, euid int) (*execCred, []string, error) {
	u, err := user.Lookup(name)
	if unknown := (user.UnknownUserError)(""); errors.As(err, &unknown) {
		if _, numErr := strconv.ParseUint(name, 10, 32); numErr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("no user %q: %v", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fmt.Errorf("user %q: %v", name, err)
	}
	env := []string{"HOME=" + u.HomeDir, "USER=" + u.Username, "LOGNAME=" + u.Username}
	if uint64(euid) == uid {
		return nil, env, nil
	}
	if euid != 0 {
		return nil, nil, fmt.Errorf("commands cannot run as %s (uid %d): this process runs as uid %d, and only root can change user", u.Username, uid, euid)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, nil, fmt.Errorf("user %q: groups: %v", name, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: make([]uint32, 0, len(gids))}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("user %q: group %q: %v", name, g, err)
		}
		cred.Groups = append(cred.Groups, uint32(n))
	}
	return cred, env, nil
}

// execUserIsRoot reports whether the user name (or numeric ID) exists
// and has user ID 0, for a process running as root.
func execUserIsRoot(name string) bool {
	cred, _, err := lookupExecUser(name, 0)
	return err == nil && (cred == nil || cred.Uid == 0)
}
