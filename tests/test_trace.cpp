// Traces: every event type survives JSON lines; bad lines name file and line; the grid-state fold and
// the metrics follow the event semantics.
#include <sys/stat.h>
#include "trace/grid_state.h"
#include "trace/metrics.h"
#include "trace/timeline.h"
#include "io/limits.h"
#include "trace/trace_io.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

std::vector<Event> sample_events() {
  return {
      RunBegin{"eagle", R"({"seed":3})", 2, 3, 1024, 1, 2},
      StepBegin{0, "draft", 0},
      Draft{0, 0, "tree", {{0, 0}, {0, 1}, {0, 1}}, {5, 6, 7}, {0.5f, 0.25f, 0.125f}, {-1, 0, 0}, {0, 1, 1}},
      Frontier{0, {{0, 0}, {0, 1}}},
      Verify{0, 0, {{0, 0}, {0, 1}}, {5, 6}, {0.6f, 0.01f}, {0.5f, 0.25f}, {1.2f, 0.04f}, {0.3f, 0.9f}, {},
             {Decision::StrictAccept, Decision::Reject}},
      Resample{0, 0, "residual", {{0, 1}}, {6}, {9}, {0.3f}},
      Region{0, "island", 2, 1, {{1, 1}, {1, 2}}},
      Commit{0, {{0, 0}, {0, 1}}, {5, 9}, {0.6f, 0.3f}, 4, 6},
      KVRollback{0, 6},
      StepEnd{0, 2, 1, 3.5, 2.25, 0.5},
      StepBegin{1, "commit", 1},
      Commit{1, {{1, 0}}, {2}, {0.9f}, 6, 7, {0.42f}, {2, 7, 1, 0, 3}, {0.9f, 0.05f, 0.02f, 0.02f, 0.01f}},
      StepEnd{1, 1, 1, 1.5, 1.0, 1.0},
      RunEnd{3, 2, 5.5, 3.25, true, 1.75},
  };
}

}  // namespace

class TestTrace : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void every_event_round_trips_through_a_line() {
    for (const Event& e : sample_events()) {
      const std::string line = event_to_json_line(e);
      QVERIFY2(event_from_json_line(line) == e, line.c_str());
    }
  }

  // A RunEnd written before drafting time was recorded reads with draft_ms 0, and the metrics take it from there.
  void older_run_end_lines_still_read() {
    const Event e = event_from_json_line(R"({"type":"RunEnd","tokens":3,"nfe":2,"wall_ms":5.5,"forward_ms":3.25,"cancelled":false})");
    QCOMPARE(std::get<RunEnd>(e).draft_ms, 0.0);
    QCOMPARE(compute_metrics(sample_events()).draft_ms, 1.75);
  }

  // A Commit written before the target's entropy and top candidates were recorded reads with them empty.
  void older_commit_lines_still_read() {
    const Event e = event_from_json_line(
        R"({"type":"Commit","step":1,"cells":[[1,0]],"tokens":[2],"p_of_token":[0.9],"kv_begin":6,"kv_end":7})");
    QCOMPARE(std::get<Commit>(e).tokens, std::vector<int>{2});
    QVERIFY(std::get<Commit>(e).entropy.empty() && std::get<Commit>(e).top_tokens.empty());
  }

  void trace_file_round_trips() {
    const std::string path = dir_.path().toStdString() + "/run.jsonl";
    {
      TraceWriter writer(path);
      for (const Event& e : sample_events()) writer.write(e);
      QVERIFY(!QFile::exists(QString::fromStdString(path)));  // only the .partial exists until finish()
      writer.finish();
    }
    QVERIFY(read_trace(path) == sample_events());
  }

  void unfinished_trace_leaves_nothing_behind() {
    const std::string path = dir_.path().toStdString() + "/abandoned.jsonl";
    {
      TraceWriter writer(path);
      writer.write(sample_events().front());
    }
    QVERIFY(!QFile::exists(QString::fromStdString(path)));
    QVERIFY(!QFile::exists(QString::fromStdString(path + ".partial")));
  }

  void bad_lines_name_the_line() {
    const std::string path = dir_.path().toStdString() + "/bad.jsonl";
    test::write_bytes(path, event_to_json_line(sample_events()[0]) + "\n{\"type\":\"Warp\"}\n");
    EXPECT_ERROR(read_trace(path), "bad.jsonl:2: unknown event type 'Warp' (allowed: RunBegin");
    test::write_bytes(path, "{\"type\":\"Commit\",\"step\":1}\n");
    EXPECT_ERROR(read_trace(path), "bad.jsonl:1: event 'Commit'");
    test::write_bytes(path, "not json\n");
    EXPECT_ERROR(read_trace(path), "bad.jsonl:1: the line: not valid UTF-8 JSON");
    test::write_bytes(path, R"({"type":"Verify","step":0,"round":0,"cells":[[0,0]],"tokens":[1],"p_of_token":[],)"
                            R"("q_of_token":[],"ratio":[],"u":[],"pooled_p":[],"decisions":["MAYBE"]})" "\n");
    EXPECT_ERROR(read_trace(path), "unknown decision 'MAYBE'");
  }

  // Damaged or hostile traces get an error naming the line: deep nesting, endless or huge labels, counts that
  // would make the charts lay out millions of ticks, cells and lists that do not fit the run, no RunBegin,
  // repeated keys; and only regular files are read (a FIFO would block, /dev/zero never ends).
  void hostile_traces_are_refused_before_they_cost_anything() {
    const std::string path = dir_.path().toStdString() + "/hostile.jsonl";
    const std::string begin = event_to_json_line(sample_events()[0]) + "\n";  // a 2x3 grid, vocabulary 1024
    const auto refused = [&](const std::string& body, const char* message) {
      test::write_bytes(path, body);
      EXPECT_ERROR(read_trace(path), message);
    };
    refused(event_to_json_line(sample_events()[1]) + "\n", "hostile.jsonl:1: a trace starts with RunBegin, this line is StepBegin");
    refused(begin + R"({"type":"Frontier","step":0,"cells":)" + std::string(100000, '[') + std::string(100000, ']') + "}\n",
            "hostile.jsonl:2: the line: JSON nests deeper than 6 levels");
    refused(begin + R"({"type":"Frontier","step":0,"cells":[[0,0,0]]})" "\n", "a cell must be [row, col], got an array of 3");
    RunBegin long_label = std::get<RunBegin>(sample_events()[0]);
    long_label.method = std::string(1000000, 'm');
    refused(event_to_json_line(long_label) + "\n", "hostile.jsonl:1: field 'method' holds 1000000 characters (the label limit is 256)");
    refused(begin + event_to_json_line(StepEnd{0, 2147483647, 1, 1.0, 1.0, 1.0}) + "\n",
            "hostile.jsonl:2: field 'committed_cells' is 2147483647 (allowed: 0 to 6)");
    refused(begin + event_to_json_line(StepEnd{0, 1, 100000, 1.0, 1.0, 1.0}) + "\n", "field 'fwd_passes_step' is 100000 (allowed: 0 to 65536)");
    Draft chain;  // one node past the limit: the window lays a tree out node by node
    chain.source = "eagle";
    for (int i = 0; i <= limits::kMaxDraftNodes; ++i) {
      chain.cells.push_back({0, 0});
      chain.tokens.push_back(1);
      chain.tree_parent.push_back(i - 1);
    }
    refused(begin + event_to_json_line(chain) + "\n", "field 'cells' holds 65537 drafted cells (allowed: at most 65536)");
    refused(begin + event_to_json_line(Commit{0, {{5, 0}}, {1}, {0.5f}, 0, 1}) + "\n", "hostile.jsonl:2: cell (5, 0) is outside the 2x3 grid");
    refused(begin + event_to_json_line(Commit{0, {{0, 0}}, {5000}, {0.5f}, 0, 1}) + "\n", "token 5000 is outside the 1024-code vocabulary");
    refused(begin + event_to_json_line(Commit{0, {{0, 0}, {0, 1}}, {1}, {0.5f}, 0, 1}) + "\n", "field 'tokens' holds 1 values for 2 cells");
    refused(begin + R"({"type":"KVRollback","step":0,"to_len":1,"to_len":2})" "\n", "the key 'to_len' appears twice in one object");
    refused(begin + begin, "hostile.jsonl:2: a second RunBegin");
    RunBegin huge_grid = std::get<RunBegin>(sample_events()[0]);
    huge_grid.grid_rows = 100000;
    refused(event_to_json_line(huge_grid) + "\n", "field 'grid_rows' is 100000 (allowed: 0 to 128)");
    // Not regular files: refused without opening them.
    EXPECT_ERROR(read_trace("/dev/zero"), "refusing to read trace '/dev/zero': it is a device");
    const std::string fifo = dir_.path().toStdString() + "/fifo.jsonl";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_ERROR(read_trace(fifo), "it is a FIFO");
    EXPECT_ERROR(read_trace(dir_.path().toStdString()), "it is a folder");
    // The sample trace still reads, line for line.
    test::write_bytes(path, [] {
      std::string text;
      for (const Event& e : sample_events()) text += event_to_json_line(e) + "\n";
      return text;
    }());
    QCOMPARE(read_trace(path).size(), sample_events().size());
  }

  void grid_state_follows_the_cell_state_machine() {
    GridState grid;
    const auto events = sample_events();
    grid.apply(events[0]);
    QCOMPARE(grid.rows(), 2);
    QCOMPARE(grid.cols(), 3);
    grid.apply(events[2]);  // Draft
    QCOMPARE(grid.at(0, 1).state, CellState::Drafted);
    QCOMPARE(grid.at(0, 1).token, 7);  // the last draft for the cell wins
    grid.apply(events[4]);  // Verify
    QCOMPARE(grid.at(0, 0).state, CellState::Accepted);
    QCOMPARE(grid.at(0, 1).state, CellState::Rejected);
    QCOMPARE(grid.at(0, 1).times_verified, 1);
    QCOMPARE(grid.at(0, 1).times_accepted, 0);
    grid.apply(events[5]);  // Resample
    QCOMPARE(grid.at(0, 1).state, CellState::Resampled);
    QCOMPARE(grid.at(0, 1).token, 9);
    for (std::size_t i = 6; i < events.size(); ++i) grid.apply(events[i]);
    QCOMPARE(grid.committed_count(), 3);
    QCOMPARE(grid.at(1, 0).commit_step, 1);
    QCOMPARE(grid.at(0, 1).commit_step, 0);
    QCOMPARE(grid.committed_tokens(), (std::vector<int>{5, 9, -1, 2, -1, -1}));
    QCOMPARE(grid.last_step(), 1);
    EXPECT_ERROR(grid.apply(Commit{2, {{5, 5}}, {1}, {}, 0, 1}), "cell (5, 5) is outside the 2x3 grid");
  }

  void metrics_use_one_definition() {
    const RunMetrics m = compute_metrics(sample_events());
    QCOMPARE(m.tokens, 3);
    QCOMPARE(m.nfe, 2);
    QCOMPARE(m.steps, 2);
    QCOMPARE(m.drafted_verified, 2L);
    QCOMPARE(m.accepted, 1L);
    QCOMPARE(m.mean_accepted_length(), 1.5);
    QCOMPARE(m.acceptance_rate(), 0.5);
    QCOMPARE(m.wall_ms, 5.5);
    QCOMPARE(m.outside_forward_share(), 1.0 - 3.25 / 5.5);
    QVERIFY(m.cancelled);
  }

  void timeline_indexes_steps_and_replays_any_prefix() {
    const std::vector<Event> events = sample_events();
    const Timeline timeline(events);
    QCOMPARE(timeline.step_count(), 2);
    QVERIFY(timeline.finished());
    QCOMPARE(timeline.run_begin()->method, std::string("eagle"));
    const StepPoint& first = timeline.steps()[0];
    QCOMPARE(first.committed, 2);
    QCOMPARE(first.forward_passes, 1);
    QCOMPARE(first.verified, 2);
    QCOMPARE(first.accepted, 1);
    QCOMPARE(first.acceptance_rate(), 0.5);
    QCOMPARE(first.tokens_per_pass(), 2.0);
    QCOMPARE(timeline.steps()[1].tokens_total, 3);
    QCOMPARE(timeline.steps()[1].nfe_total, 2);
    QCOMPARE(timeline.steps()[1].verified, 0);

    QCOMPARE(timeline.state_after(0).committed_count(), 0);
    QCOMPARE(timeline.state_after(0).rows(), 2);  // RunBegin applied: the grid has its size
    const GridState after_one = timeline.state_after(1);
    QCOMPARE(after_one.committed_count(), 2);
    QCOMPARE(after_one.at(1, 0).state, CellState::Empty);
    QCOMPARE(after_one.at(0, 1).token, 9);
    // The whole run equals folding every event.
    GridState all;
    for (const Event& e : events) all.apply(e);
    QCOMPARE(timeline.state_after(2).committed_tokens(), all.committed_tokens());
    QCOMPARE(timeline.metrics_after(1).nfe, 1);
    QCOMPARE(timeline.metrics_after(2).tokens, 3);
    QCOMPARE(timeline.events_of_step(1).size(), std::size_t(3));  // StepBegin, Commit, StepEnd
    QVERIFY(timeline.events_of_step(2).empty());

    // Appending live gives the same index, and the latest state (kept between calls) always equals a fold of
    // every event so far.
    Timeline live;
    for (std::size_t i = 0; i < 9; ++i) live.append(events[i]);  // inside step 0
    QCOMPARE(live.step_count(), 0);
    QCOMPARE(live.state_after(live.step_count()).at(0, 0).state, CellState::Committed);
    for (std::size_t i = 9; i < events.size(); ++i) {
      live.append(events[i]);
      GridState folded;
      for (std::size_t k = 0; k <= i; ++k) folded.apply(events[k]);
      const GridState latest = live.state_after(live.step_count());
      QCOMPARE(latest.committed_tokens(), folded.committed_tokens());
      for (int r = 0; r < folded.rows(); ++r)
        for (int c = 0; c < folded.cols(); ++c) QCOMPARE(latest.at(r, c).state, folded.at(r, c).state);
      QCOMPARE(live.state_after(0).committed_count(), 0);  // an earlier point in between
    }
    QCOMPARE(live.step_count(), 2);
  }

  void step_explanation_says_what_happened() {
    const Timeline timeline(sample_events());
    const std::string first = explain_step(timeline.events_of_step(0), 0, 2);
    QVERIFY2(first.find("Step 1 of 2.") == 0, first.c_str());
    QVERIFY2(first.find("grew a tree of 3 candidate tokens") != std::string::npos, first.c_str());
    QVERIFY2(first.find("At row 0, column 1, token 6 (target p 0.01, u 0.9) was rejected") != std::string::npos, first.c_str());
    QVERIFY2(first.find("1 accepted (u < p/q), 1 rejected") != std::string::npos, first.c_str());
    QVERIFY2(first.find("residual distribution") != std::string::npos, first.c_str());
    QVERIFY2(first.find("the exact rule, which leaves the target's distribution unchanged") != std::string::npos, first.c_str());
    QVERIFY2(first.find("1 target forward pass, 2 tokens committed") != std::string::npos, first.c_str());
    QVERIFY2(first.find("Plain ar would have committed 1 token with as many passes: this step gained 1.") != std::string::npos,
             first.c_str());
    const std::string second = explain_step(timeline.events_of_step(1), 1, 2);
    QVERIFY2(second.find("Committed the token 2 at row 1, column 0 (target probability 0.9)") != std::string::npos, second.c_str());
    QVERIFY2(second.find("Plain ar would have committed as many with the same passes: no gain in this step.") != std::string::npos,
             second.c_str());
    // A rejection names what the target wanted at that cell, from the step's Commit.
    const std::string wanted = explain_step(
        {StepBegin{2, "verify", 2}, Verify{2, 0, {{0, 2}}, {6}, {0.01f}, {0.5f}, {0.02f}, {0.9f}, {}, {Decision::Reject}},
         Commit{2, {{0, 2}}, {4}, {0.3f}, 2, 3, {1.5f}, {4, 6, 1, 2, 3}, {0.6f, 0.01f, 0.01f, 0.01f, 0.01f}},
         StepEnd{2, 1, 2, 1.0, 1.0, 0.0}},
        2, 5);
    QVERIFY2(wanted.find("The target's own favourite there was token 4 (p 0.6).") != std::string::npos, wanted.c_str());
    QVERIFY2(wanted.find("this step fell behind by 1.") != std::string::npos, wanted.c_str());
    QVERIFY2(wanted.find("2 target forward passes, 1 token committed") != std::string::npos, wanted.c_str());
    // SSD: a frontier drafted by a vertical head, then a later round that redraws a cell.
    const std::string ssd = explain_step({StepBegin{3, "verify", 2}, Frontier{3, {{1, 0}, {1, 1}}},
                                          Draft{3, 0, "v_head(1)", {{1, 0}, {1, 1}}, {4, 5}, {0.5f, 0.5f}, {}, {}}},
                                         3, 6);
    QVERIFY2(ssd.find("The drafting frontier holds 2 cells, drafted at once.") != std::string::npos, ssd.c_str());
    QVERIFY2(ssd.find("SSD's vertical head 1 drew 2 tokens at row 1, columns 0\u20131 from the committed cells 1 row above.") !=
                 std::string::npos, ssd.c_str());
    const std::string redraw = explain_step({StepBegin{4, "verify", 3}, Draft{4, 1, "h_head(2)", {{0, 3}}, {4}, {0.5f}, {}, {}},
                                             Verify{4, 1, {{0, 3}}, {4}, {0.4f}, {0.5f}, {0.8f}, {0.1f}, {}, {Decision::StrictAccept}}},
                                            4, 6);
    QVERIFY2(redraw.find("Their context changed, so SSD's horizontal head 2 drew 1 token at row 0, column 3 from the committed cell 2 to the left.") !=
                 std::string::npos, redraw.c_str());
    QVERIFY2(redraw.find("Verification round 2.") != std::string::npos, redraw.c_str());
    // MuLo-SD: a low-resolution row, its up-sampled block, a pooled-probability pass, one seed, its expansion in
    // two islands, and the first resampling pass.
    const std::string mulo = explain_step(
        {StepBegin{5, "verify", 4}, Draft{5, 0, "low_res", {{1, 0}, {1, 1}}, {4, 5}, {0.5f, 0.5f}, {}, {}},
         Draft{5, 0, "upsampler", {{2, 0}, {2, 1}, {3, 0}}, {6, 7, 8}, {}, {}, {}},
         Verify{5, 0, {{2, 0}, {2, 1}, {3, 0}}, {6, 7, 8}, {0.3f, 0.01f, 0.001f}, {}, {}, {}, {0.3f, 0.2f, 0.01f},
                {Decision::StrictAccept, Decision::SoftAccept, Decision::Reject}},
         Region{5, "rejected_seed", -1, 0, {{3, 0}}}, Region{5, "expansion", -1, 1, {{2, 0}, {2, 1}, {3, 0}}},
         Region{5, "island", 0, 1, {{2, 0}, {2, 1}}}, Region{5, "island", 1, 1, {{3, 0}}},
         Resample{5, 0, "target", {{2, 0}, {3, 0}}, {6, 8}, {9, 10}, {0.5f, 0.5f}}},
        5, 9);
    for (const char* told : {"low-resolution drafter drew 2 tokens, one after another, at row 1, columns 0\u20131",
                             "pixel up-sampler (decode, enlarge, encode again) turned them into 3 tokens",
                             "1 accepted on their own probability (\u2265 \u03c4), 1 by pooling their nearest codes' probability, 1 rejected",
                             "At row 3, column 0, token 8 (target p 0.001) stayed below \u03c4 even with its nearest codes pooled in (p\u0303 0.01): a rejected seed.",
                             "The rejected cells are seeds: row 3, column 0.", "within 1 row and column of it in this block: 3 cells.",
                             "They form 2 8-connected islands (the largest 2 cells)", "Resampling pass 1: 2 tokens at row 2, column 0; row 3, column 0 were drawn again from the target"})
      QVERIFY2(mulo.find(told) != std::string::npos, (std::string(told) + " | " + mulo).c_str());
  }

  void grid_state_keeps_mulo_regions_and_the_low_resolution_grid() {
    GridState grid;
    grid.apply(RunBegin{"mulo", "{}", 4, 4, 16, 2, 2});
    grid.apply(Draft{1, 0, "low_res", {{0, 0}, {0, 1}}, {3, 4}, {0.5f, 0.5f}, {}, {}});
    grid.apply(Draft{1, 0, "upsampler", {{0, 1}, {0, 2}, {1, 1}}, {7, 8, 9}, {}, {}, {}});
    grid.apply(Region{1, "rejected_seed", -1, 0, {{0, 2}}});
    grid.apply(Region{1, "expansion", -1, 1, {{0, 1}, {0, 2}, {1, 1}}});
    grid.apply(Region{1, "island", 0, 1, {{0, 1}, {0, 2}, {1, 1}}});
    grid.apply(Resample{2, 1, "target", {{0, 2}}, {8}, {5}, {0.4f}});
    grid.apply(Draft{2, 0, "low_res_prefix", {{0, 0}, {0, 1}}, {6, 4}, {}, {}, {}});
    QCOMPARE(grid.low_res_tokens(), (std::vector<int>{6, 4, -1, -1}));
    QCOMPARE(grid.low_res_draft_step(), 1);
    QCOMPARE(grid.low_res_first_drafted(), 0);
    QCOMPARE(grid.upsampled_step(), 1);
    QCOMPARE(grid.at(0, 1).state, CellState::Drafted);  // up-sampled cells are drafts of the full grid
    QVERIFY(grid.at(0, 2).rejected_seed && grid.at(0, 2).expanded && !grid.at(0, 1).rejected_seed && grid.at(0, 1).expanded);
    QCOMPARE(grid.at(1, 1).island, 0);
    QCOMPARE(grid.at(0, 2).resample_pass, 1);
    QCOMPARE(grid.at(0, 1).resample_pass, -1);
    QCOMPARE(grid.at(0, 0).state, CellState::Empty);  // low-resolution cells never touch the full grid
    EXPECT_ERROR(grid.apply(Draft{3, 0, "low_res", {{2, 0}}, {1}, {0.5f}, {}, {}}), "outside the 2x2 low-resolution grid");
  }
};

QTEST_GUILESS_MAIN(TestTrace)
#include "test_trace.moc"
