func.func @first(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  func.return %0 : i32
}

func.func @second() {
  func.return
}
