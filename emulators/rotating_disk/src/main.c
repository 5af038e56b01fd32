/* corun-rotating-disk: an emulated rotating disk (FUSE) and its model's replay mode. */
#include "options.h"
#include "replay.h"
#include "serve.h"

int main(int argc, char *argv[])
{
	struct rd_config c;

	rd_parse_options(&c, argc, argv);
	if (c.replay)
		return rd_replay(&c, argc, argv);
	return rd_serve(&c, argc, argv);
}
