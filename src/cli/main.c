/* rnnstate-rewrite: the command line's entry point. It sets the process's
 * signal policy, parses the options, turns the arguments into jobs and
 * runs them through the library (src/cli/cli.h maps the rest). */
#include "cli/cli.h"

int main(int argc, char **argv)
{
    signals_init();
    cli c = { 0 };
    job *jobs = NULL;
    size_t n_jobs = 0, empty_dirs = 0;
    int status = parse_args(argc, argv, &c);
    if (status < 0 && c.models.n == 0)
        status = usage_error("%s", "no model given");
    if (status < 0)
        status = make_jobs(&c, &jobs, &n_jobs, &empty_dirs);
    if (status < 0) {
        /* a directory without models is an error (a typo in a CI script), but
         * it does not stop the models that were found */
        status = n_jobs ? run(&c, jobs, n_jobs) : EXIT_OK;
        if (empty_dirs && status != EXIT_MODEL_FAILED)
            status = EXIT_MODEL_FAILED;
    }
    jobs_free(jobs, n_jobs);
    cli_free(&c);
    return status;
}
