// heat-config-notify's exit codes, in one place: heat-config (and any caller) decides from them whether a
// result must be handed over again. Only 1 means "settled for good"; the others mean "nothing was kept or
// sent because of this machine: fix it and hand the signal over again" (sysexits.h numbers).

/** A signal settled without delivery for good: the server refused it (4xx), or the deployment cannot be signalled. */
export const EXIT_REFUSED = 1;

/** heat-config-notify failed in itself (a bug, an unexpected I/O error): whether the signal was queued is unknown (EX_SOFTWARE). */
export const EXIT_INTERNAL = 70;

/**
 * The signal could not be queued (the outbox could not be written: full, read-only, not a directory), or the signal
 * data on stdin was cut short (its writer died mid-write): nothing was sent or kept (EX_TEMPFAIL).
 */
export const EXIT_NOT_QUEUED = 75;

/**
 * The command line, the environment (`HEARTH_NOTIFY_*`, `HEARTH_LOG_FORMAT`) or the deployment file given cannot be
 * used: nothing was queued or sent (EX_CONFIG). Never 1, so a typo on the VM is not taken for a server's refusal.
 * `--drain` exits with it too while outbox entries it cannot read are left: those were not sent, and only an
 * operator can repair them.
 */
export const EXIT_CONFIG = 78;
