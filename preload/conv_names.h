/*
 * conv_names.h - the preload's conversions as users name them, in table
 * order.  One list for the preload (its enum and names, preload.h and
 * conv.c) and for zcrun, which checks --disable/--enable without loading
 * the preload.  X(ENUM, "name").
 */
#ifndef ZCP_CONV_NAMES_H
#define ZCP_CONV_NAMES_H

#define ZCP_CONVERSIONS(X)        \
	X(ZCP_PIPE, "pipe")          \
	X(ZCP_MAPWRITE, "mapwrite")  \
	X(ZCP_FORWARD, "forward")    \
	X(ZCP_STDIO, "stdio")

#endif
