/*
 * zc-backend: print the backend libzc chose in this process (guest-side
 * check that libzc selects the kernel backend on the patched kernel, and
 * the portable one under ZC_BACKEND=portable).  Built with glibc against
 * libzc, like the libzc tests themselves.
 */
#include <stdio.h>

#include "zc.h"

int main(void)
{
	printf("%s\n", zc_backend_name());
	return 0;
}
