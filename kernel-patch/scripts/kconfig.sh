# kconfig.sh - the lane's kernel configuration, sourced by build-kernel.sh
# and check-series.sh so that both build the same kernel: tinyconfig, the
# fragments merged on top, olddefconfig.  Run in the kernel source tree
# with ARCH set; OBJ is the build directory (the tree itself for an
# in-tree build).

# zc_kconfig_merge OBJ FRAGMENT...: merge the fragments into OBJ/.config
# and resolve what they imply.  Again after a patch that adds an option the
# fragment asks for (check-series.sh).
zc_kconfig_merge() {
	local obj=$1
	shift
	scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "$@" >/dev/null
	make -s O="$obj" olddefconfig >/dev/null
}

# zc_kconfig OBJ FRAGMENT...: the configuration from scratch.
zc_kconfig() {
	local obj=$1
	shift
	make -s O="$obj" tinyconfig >/dev/null
	zc_kconfig_merge "$obj" "$@"
}

# zc_kconfig_check OBJ FRAGMENT...: every option the fragments set
# survived olddefconfig (a missing dependency drops it silently); prints
# the ones that did not and fails.
zc_kconfig_check() {
	local obj=$1 f line missing=0
	shift
	for f in "$@"; do
		while IFS= read -r line; do
			case $line in
			CONFIG_*=*)
				if ! grep -qx "$line" "$obj/.config"; then
					echo "kernel: config option not set: $line (${f##*/})"
					missing=1
				fi ;;
			esac
		done < "$f"
	done
	return "$missing"
}
