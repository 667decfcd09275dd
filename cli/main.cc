// kvx: the command-line tool of the kvx KV-cache transfer engine.
//   kvx agent --role prefill|decode ...   one agent process (see kvx agent --help)
//   kvx demo [...]                        two decode agents and a prefill agent, and a report
//   kvx bench --scenario NAME [...]       KV migration benchmark beside a bare UCP loop
//   kvx doctor [...]                      is GPUDirect RDMA usable here, and how to fix it
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/agent_command.h"
#include "cli/agent_options.h"
#include "cli/bench_command.h"
#include "cli/demo_command.h"
#include "cli/doctor_command.h"
#include "daemon/signals.h"

namespace {

// Lists each subcommand with the first line of its description only: the full text is for
// `kvx SUBCOMMAND --help`.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& description = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             description.substr(0, description.find('\n')), column_width_);
    return out.str();
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts: every thread inherits the blocked SIGINT/SIGTERM.
  auto stop = kvx::daemon::StopSignal::install();
  if (!stop.isOk()) {
    std::fprintf(stderr, "kvx: %s\n", stop.status().toString().c_str());
    return 1;
  }
  CLI::App app{
      "kvx: moves LLM KV caches between prefill and decode agents (disaggregated inference).\n"
      "Start with `kvx demo`; run agents yourself with `kvx agent`."};
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  kvx::daemon::AgentConfig agentConfig;
  CLI::App* agent = app.add_subcommand("agent", "run one prefill or decode agent");
  kvx::cli::addAgentOptions(*agent, agentConfig);
  kvx::cli::DemoOptions demoOptions;
  CLI::App* demo = app.add_subcommand("demo",
                                      "run two decode agents and a prefill agent and "
                                      "print a KV migration latency report");
  kvx::cli::addDemoOptions(*demo, demoOptions);
  kvx::cli::BenchOptions benchOptions;
  CLI::App* bench = app.add_subcommand(
      "bench", "measure KV migration with real agents, beside the bare UCP limit");
  kvx::cli::addBenchOptions(*bench, benchOptions);
  kvx::cli::DoctorCommandOptions doctorOptions;
  CLI::App* doctor = app.add_subcommand("doctor", "check whether GPUDirect RDMA is usable here");
  kvx::cli::addDoctorOptions(*doctor, doctorOptions);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help or the error
    return code == 0 ? 0 : 2;
  }
  if (agent->parsed()) return kvx::cli::runAgentCommand(*agent, agentConfig, **stop);
  if (doctor->parsed()) return kvx::cli::runDoctorCommand(doctorOptions);
  if (bench->parsed()) {
    std::string commandLine = "kvx";
    for (int i = 1; i < argc; ++i) commandLine += std::string(" ") + argv[i];
    return kvx::cli::runBenchCommand(benchOptions, commandLine, **stop);
  }
  return kvx::cli::runDemoCommand(demoOptions, **stop);
}
