# ruff: noqa: RUF001  (Chinese is written with full-width punctuation)
"""The lesson panel's own words, in each language (the lesson files bring the rest)."""

from __future__ import annotations

from kinspect.lessons.lesson_values import Panel, Text, Trigger

LESSON = Text("lesson", "课程")
COLON = Text(": ", "：")
PREDICT = Text("Your prediction", "你的预测")
CHOOSE = Text("press 1-{n}", "按 1-{n} 选择")
READY = Text("Predictions made. Space: run it on the lab (the lab is reset first).",
             "预测完成。按空格在实验集群上运行（先重置集群）。")
RUNNING = Text("running", "运行中")
GO_ON = Text("space: go on", "空格：继续")
WAITING = Text("waiting for: {what}", "等待：{what}")
LOOK = Text("look", "请看")
REVEAL = Text("What happened", "结果揭晓")
YOU_SAID = Text("you said", "你的预测")
MEASURED = Text("measured", "实测")
RIGHT = Text("right", "猜对了")
WRONG = Text("not this time", "这次没猜中")
NOT_MEASURED = Text("not measured", "未测得")
FAILED = Text("the run did not finish: {why}", "运行未完成：{why}")
REPORT_KEY = Text("m: the post-mortem's report and chart", "m：查看事后分析报告和图表")
WHY = Text("Why", "原因")
FIX_ASK = Text("The fix", "修复")
FIX_WRONG = Text("Would not have helped: {why}", "这样不行：{why}")
FIX_RUN = Text("Space: rerun the lesson with it.", "按空格用这个设置重新运行。")
FIX_HELD = Text("The expectation held", "预期成立")
FIX_NOT_HELD = Text("The expectation did NOT hold", "预期未成立")
LEARNED = Text("What you learned", "你学到了")
NEXT = Text("Space: next lesson, {name}", "按空格进入下一课：{name}")
ALL_DONE = Text("That was the last lesson.", "这是最后一课。")
HINT = Text("hint", "提示")
NO_HINT = Text("no more hints", "没有更多提示")
KEYS = Text("T hint · R restart · N skip", "T 提示 · R 重来 · N 跳过")
STAGE_KEYS = Text("B: play the last good run instead", "B：改为播放上次成功的录制")
BACKUP = Text("playing the recording of {when} (the live lab is not used)",
              "正在播放 {when} 的录制（不使用实时集群）")
NO_BACKUP = Text("no recording of this lesson yet: run it once live", "本课还没有录制：请先实时运行一次")
NEEDS_MODE = Text("This lesson needs a {mode} lab. Space: remake the lab in {mode} mode.",
                  "本课需要 {mode} 模式的集群。按空格以 {mode} 模式重建集群。")

PANEL_NAMES: dict[Panel, Text] = {
    Panel.HEADER: Text("the header", "顶部标题栏"),
    Panel.BROKERS: Text("the brokers panel", "brokers 面板"),
    Panel.PARTITIONS: Text("the partitions panel", "partitions 面板"),
    Panel.EVENTS: Text("the events panel", "events 面板"),
    Panel.LOAD: Text("the load panel", "load 面板"),
    Panel.WARNINGS: Text("the warnings panel", "warnings 面板"),
    Panel.GROUPS: Text("the consumer groups panel", "consumer groups 面板"),
}

TRIGGER_NAMES: dict[Trigger, Text] = {
    Trigger.START: Text("the run to start", "运行开始"),
    Trigger.FAULT: Text("the fault", "故障注入"),
    Trigger.HEAL: Text("the heal", "网络恢复"),
    Trigger.LEADER_CHANGED: Text("a new leader", "选出新的领导者"),
    Trigger.ISR_SHRANK: Text("the ISR to shrink", "ISR 收缩"),
    Trigger.ISR_EXPANDED: Text("the ISR to grow back", "ISR 恢复"),
    Trigger.CONTROLLER_CHANGED: Text("the controller to change", "控制器变更"),
    Trigger.VIEWS_DISAGREE: Text("two brokers to claim the lead", "两个 broker 同时自称领导者"),
    Trigger.BROKER_GONE: Text("a broker to go", "broker 离开集群"),
    Trigger.LIVE_LOST: Text("the first acknowledged loss", "第一条已确认消息丢失"),
    Trigger.END: Text("the run to end", "运行结束"),
}
