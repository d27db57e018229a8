/* zc-exit CODE: leave qemu through isa-debug-exit (iobase 0xf4). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>

int main(int argc, char **argv)
{
	unsigned int code = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;

	if (ioperm(0xf4, 4, 1)) {
		perror("zc-exit: ioperm");
		return 1;
	}
	outl(code, 0xf4);
	return 1;	/* not reached under qemu */
}
