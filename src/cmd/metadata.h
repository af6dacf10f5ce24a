/* metadata.h - `bootccm metadata`: print the local instance's facts; and the
 * --metadata-* flags it shares with the daemon.
 *
 * Contract: md_cmd returns the process exit status: 0 printed, 2 usage
 * error, 3 no metadata service found, 4 a service was found but failed (or
 * did not answer within --timeout, MD_CMD_TIMEOUT by default: the whole
 * command's time limit), 1 standard output could not be written. Errors and
 * warnings go to stderr, the facts to stdout, both through the logger's
 * redaction (an answer may echo the session token), and nothing is printed
 * on stdout on failure. */
#ifndef BOOTCCM_MD_CMD_H
#define BOOTCCM_MD_CMD_H

#include "base/stop.h"

#define MD_CMD_EXIT_OK 0
#define MD_CMD_EXIT_OUTPUT 1
#define MD_CMD_EXIT_USAGE 2
#define MD_CMD_EXIT_NOT_FOUND 3
#define MD_CMD_EXIT_FAILED 4

#define MD_CMD_TIMEOUT "10s"  /* --timeout's default */
#define MD_CMD_TIMEOUT_MAX_S 3600  /* --timeout's bound: an hour */

/* MD_FLAGS expands to the struct flag entries (flags.h) of the metadata
 * flags, pointing at four char * fields; the daemon's table and md_cmd's
 * both use it, so the two cannot drift apart. Pass them to md_config_set. */
#define MD_FLAGS(cloud, endpoint, dmi_dir, config_drive)                                \
	{ "metadata-cloud", FLAG_STRING, (cloud), "auto",                               \
	  "Cloud whose instance metadata to read: auto (detect from DMI data), ec2, gce, " \
	  "azure, openstack, digitalocean or hetzner.", 0 },                            \
	{ "metadata-endpoint", FLAG_STRING, (endpoint), NULL,                           \
	  "Base URL of the instance metadata service (default http://169.254.169.254; " \
	  "on EC2 then http://[fd00:ec2::254]).", 0 },                                  \
	{ "metadata-dmi-dir", FLAG_STRING, (dmi_dir), "/sys/class/dmi/id",              \
	  "Directory of the DMI attributes the cloud is detected from.", 0 },           \
	{ "metadata-config-drive", FLAG_STRING, (config_drive), NULL,                   \
	  "Directory where an OpenStack config drive (label config-2) is mounted; read " \
	  "before the metadata service.", 0 }

/* md_cmd runs `bootccm metadata`; argv[0] is "metadata". stop is the
 * process's (SIGTERM and SIGINT request it): it ends the fetch's retries,
 * and md_cmd requests it itself at --timeout and when done. */
int md_cmd(int argc, char **argv, struct stop *stop);

#endif
