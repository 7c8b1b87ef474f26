! Every kind of MPI call commscope counts, from Fortran through `use mpi` (or, built
! with -cpp -DMPIF_H, through include 'mpif.h'), on exactly 2 ranks.
! tests/programs/fortran_mpi_f08.f90 makes the same calls through `use mpi_f08`.
!
!   fortran_mpi DIR      (DIR: an existing directory for the MPI-IO file and the report)
!
! r is the world rank, p = 1 - r the other one.  INTEGER is 4 bytes and DOUBLE
! PRECISION 8.  Tag k is used by step k only.
!
!  0. MPI_Init (the f08 program: MPI_Init_thread, MPI_THREAD_FUNNELED).
!     MPI_Comm_rank and MPI_Comm_size are not counted by the library.
!  1. Rank 0 MPI_Send's 10 INTEGER (40 B) to 1; rank 1 MPI_Recv's them with
!     MPI_STATUS_IGNORE.
!  2. Rank 1 MPI_Send's 20 DOUBLE PRECISION (160 B) to 0; rank 0 MPI_Recv's them
!     from MPI_ANY_SOURCE into a status (and checks its source and tag).
!  3. Each rank MPI_Irecv's 30 INTEGER (120 B) from p and MPI_Isend's 30 INTEGER to
!     p; one MPI_Waitall with MPI_STATUSES_IGNORE completes both.
!  4. The same with 40 INTEGER (160 B), completed by one MPI_Waitall into a statuses
!     array (checked).
!  5. The same with 5 INTEGER (20 B), completed by 2 x MPI_Waitany into a status
!     (checked: two different indices, both requests MPI_REQUEST_NULL after; an
!     index of 0 is let pass: MPICH 4.0's mpi_f08 returns them 0-based,
!     pmodels/mpich#6270).
!  6. Rank 0 MPI_Isend's 7 DOUBLE PRECISION (56 B) to 1, rank 1 MPI_Irecv's them;
!     each polls its request with MPI_Test (into a status) until done, and writes
!     how many MPI_Test calls that took to DIR/test_calls.<r> (one integer).
!  7. Persistent: rank 0 MPI_Send_init (8 INTEGER, 32 B, to 1), rank 1
!     MPI_Recv_init (8 INTEGER from 0); each does 3 x (MPI_Start, MPI_Wait; rank 0
!     with MPI_STATUS_IGNORE, rank 1 into a status), then MPI_Request_free of the
!     inactive request (nothing left to free).
!  8. Rank 0 MPI_Isend's 1 INTEGER (4 B) to 1 and MPI_Request_free's the active
!     request at once; rank 1 MPI_Recv's it with MPI_STATUS_IGNORE.
!  9. MPI_Bcast of 12 INTEGER (48 B) from rank 0.
! 10. MPI_Allreduce (MPI_SUM) of 6 DOUBLE PRECISION (48 B), separate buffers.
! 11. MPI_Allreduce (MPI_SUM) of 9 DOUBLE PRECISION (72 B) with MPI_IN_PLACE.
! 12. MPI_Allgather with MPI_IN_PLACE, 3 INTEGER (12 B) per rank (the send count
!     and type are ignored: the program passes 0 and MPI_DATATYPE_NULL).
! 13. MPI_Barrier.
! 14. MPI_Comm_split(MPI_COMM_WORLD, color 0, key p): ranks reversed, world rank 1
!     is rank 0 of the new communicator.  World rank 1 MPI_Send's 3 INTEGER (12 B)
!     to its rank 1 (world 0), which MPI_Recv's from its rank 0 into a status.
!     MPI_Comm_free.
! 15. MPI_Win_create over 16 INTEGER (64 B) per rank, MPI_Win_fence; rank 0
!     MPI_Put's 4 INTEGER (16 B) into rank 1's window, rank 1 MPI_Get's 5 INTEGER
!     (20 B) from rank 0's window; MPI_Win_fence (the data are checked),
!     MPI_Win_free.
! 16. MPI_File_open of DIR/fortran_io.dat on MPI_COMM_WORLD (create, read-write);
!     each rank MPI_File_write_at's 25 INTEGER (100 B) at offset 100 r with
!     MPI_STATUS_IGNORE and MPI_File_read_at's them back into a status (checked);
!     MPI_File_close.
! 17. MPI_Finalize.
! Any wrong result, status or rank count calls MPI_Abort.
!
! What that implies (tests/test_profile_fortran.py derives the same), with t_r the
! number in DIR/test_calls.<r>:
!   rank 0 calls: Init 1, Send 1, Recv 2, Isend 5, Irecv 3, Waitall 2, Waitany 2,
!     Test t_0, Send_init 1, Start 3, Wait 3, Request_free 2, Bcast 1, Allreduce 2,
!     Allgather 1, Barrier 1, Comm_split 1, Comm_free 1, Win_create 1, Win_fence 2,
!     Put 1, Win_free 1, File_open 1, File_write_at 1, File_read_at 1, File_close 1,
!     Finalize 1.
!   rank 1 calls: the same but Send 2, Recv 2, Isend 3, Irecv 4, Test t_1,
!     Recv_init 1 (no Send_init), Request_free 1, Get 1 (no Put).
!   rank 0: 9 messages sent, 496 B (40+120+160+20+56+3*32+4), all to rank 1;
!     5 received, 472 B (160+120+160+20+12), all from rank 1; one MPI_ANY_SOURCE
!     receive.  Rank 1 the mirror: 5 sent (472 B), 9 received (496 B).
!   collective_bytes 180 on each rank (48 + 48 + 72 + 12 + 0).
!   rank 0 rma_bytes_put 16 (into rank 1); rank 1 rma_bytes_got 20 (from rank 0).
!   io_bytes_written 100 and io_bytes_read 100 on each rank, all on fortran_io.dat.
!   requests: rank 0 started 11 (2+2+2+1+3+1), completed 10, freed 1;
!     rank 1 started 10, completed 10, freed 0; none cancelled or outstanding.
!     At most 2 requests are open at once (steps 3-5) and 1 receive posted: high
!     watermarks 2 and 1.
!   bytes per function: the bytes of each function's messages (a persistent
!     request's 3 x 32 B under MPI_Send_init / MPI_Recv_init), its collective, RMA
!     or file bytes.  The peer matrix holds world ranks, step 14 included.
program fortran_mpi
#ifdef MPIF_H
  implicit none
  include 'mpif.h'
#else
  use mpi
  implicit none
#endif
  integer :: ierr, rank, nranks, p, i, idx(2), nt, key, sub, subrank, win, fh
  integer :: req(2), status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2)
  integer :: i10(10), i30s(30), i30r(30), i40s(40), i40r(40), i5s(5), i5r(5)
  integer :: i8(8), one, i12(12), gath(6), i3(3), wbuf(16), i4(4), i5(5)
  integer :: io(25), back(25)
  double precision :: d20(20), d7(7), d6(6), d6r(6), d9(9)
  logical :: flag
  integer(kind=MPI_ADDRESS_KIND) :: winsize, disp
  integer(kind=MPI_OFFSET_KIND) :: offset
  character(len=4096) :: dir

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call check(nranks == 2, 'exactly 2 ranks')
  call get_command_argument(1, dir)
  call check(len_trim(dir) > 0, 'a directory argument')
  p = 1 - rank

  ! 1
  if (rank == 0) then
    i10 = [(i, i = 1, 10)]
    call MPI_Send(i10, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
  else
    call MPI_Recv(i10, 10, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call check(i10(10) == 10, 'step 1 data')
  end if
  ! 2
  if (rank == 1) then
    d20 = 2.5d0
    call MPI_Send(d20, 20, MPI_DOUBLE_PRECISION, 0, 2, MPI_COMM_WORLD, ierr)
  else
    call MPI_Recv(d20, 20, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, status, ierr)
    call check(status(MPI_SOURCE) == 1 .and. status(MPI_TAG) == 2, 'step 2 status')
    call check(d20(20) == 2.5d0, 'step 2 data')
  end if
  ! 3
  i30s = rank
  call MPI_Irecv(i30r, 30, MPI_INTEGER, p, 3, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(i30s, 30, MPI_INTEGER, p, 3, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  call check(i30r(30) == p, 'step 3 data')
  ! 4
  i40s = rank
  call MPI_Irecv(i40r, 40, MPI_INTEGER, p, 4, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(i40s, 40, MPI_INTEGER, p, 4, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, statuses, ierr)
  call check(statuses(MPI_SOURCE, 1) == p .and. statuses(MPI_TAG, 1) == 4, 'step 4 status')
  call check(i40r(40) == p, 'step 4 data')
  ! 5
  i5s = rank
  call MPI_Irecv(i5r, 5, MPI_INTEGER, p, 5, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(i5s, 5, MPI_INTEGER, p, 5, MPI_COMM_WORLD, req(2), ierr)
  do i = 1, 2
    call MPI_Waitany(2, req, idx(i), status, ierr)
  end do
  ! distinct indices (1-based; MPICH 4.0's mpi_f08 gives them 0-based, pmodels/mpich#6270)
  call check(idx(1) /= idx(2) .and. all(idx >= 0 .and. idx <= 2), 'step 5 indices')
  call check(all(req == MPI_REQUEST_NULL), 'step 5 requests done')
  call check(i5r(5) == p, 'step 5 data')
  ! 6
  if (rank == 0) then
    d7 = 6.0d0
    call MPI_Isend(d7, 7, MPI_DOUBLE_PRECISION, 1, 6, MPI_COMM_WORLD, req(1), ierr)
  else
    call MPI_Irecv(d7, 7, MPI_DOUBLE_PRECISION, 0, 6, MPI_COMM_WORLD, req(1), ierr)
  end if
  nt = 0
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req(1), flag, status, ierr)
    nt = nt + 1
  end do
  if (rank == 1) call check(d7(7) == 6.0d0 .and. status(MPI_SOURCE) == 0, 'step 6')
  open(unit=10, file=trim(dir)//'/test_calls.'//achar(48 + rank), status='replace', action='write')
  write(10, '(I0)') nt
  close(10)
  ! 7
  if (rank == 0) then
    i8 = 7
    call MPI_Send_init(i8, 8, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, req(1), ierr)
  else
    call MPI_Recv_init(i8, 8, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, req(1), ierr)
  end if
  do i = 1, 3
    call MPI_Start(req(1), ierr)
    if (rank == 0) then
      call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Wait(req(1), status, ierr)
      call check(status(MPI_SOURCE) == 0 .and. status(MPI_TAG) == 7, 'step 7 status')
    end if
  end do
  call MPI_Request_free(req(1), ierr)
  ! 8
  if (rank == 0) then
    one = 8
    call MPI_Isend(one, 1, MPI_INTEGER, 1, 8, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Request_free(req(1), ierr)
  else
    call MPI_Recv(one, 1, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call check(one == 8, 'step 8 data')
  end if
  ! 9
  i12 = rank + 9
  call MPI_Bcast(i12, 12, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(i12(12) == 9, 'step 9 data')
  ! 10
  d6 = rank + 1
  call MPI_Allreduce(d6, d6r, 6, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(d6r(6) == 3.0d0, 'step 10 data')
  ! 11
  d9 = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, d9, 9, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(d9(9) == 3.0d0, 'step 11 data')
  ! 12
  gath = -1
  gath(3 * rank + 1:3 * rank + 3) = rank + 12
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gath, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(gath(1) == 12 .and. gath(6) == 13, 'step 12 data')
  ! 13
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  ! 14
  key = p
  call MPI_Comm_split(MPI_COMM_WORLD, 0, key, sub, ierr)
  call MPI_Comm_rank(sub, subrank, ierr)
  call check(subrank == p, 'step 14 reversed ranks')
  if (rank == 1) then
    i3 = 14
    call MPI_Send(i3, 3, MPI_INTEGER, 1, 14, sub, ierr)
  else
    call MPI_Recv(i3, 3, MPI_INTEGER, 0, 14, sub, status, ierr)
    call check(status(MPI_SOURCE) == 0 .and. i3(3) == 14, 'step 14 status')
  end if
  call MPI_Comm_free(sub, ierr)
  ! 15
  wbuf = [(100 * rank + i, i = 1, 16)]
  winsize = 64
  call MPI_Win_create(wbuf, winsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (rank == 0) then
    i4 = 15
    disp = 0
    call MPI_Put(i4, 4, MPI_INTEGER, 1, disp, 4, MPI_INTEGER, win, ierr)
  else
    disp = 8
    call MPI_Get(i5, 5, MPI_INTEGER, 0, disp, 5, MPI_INTEGER, win, ierr)
  end if
  call MPI_Win_fence(0, win, ierr)
  if (rank == 1) then
    call check(wbuf(4) == 15 .and. wbuf(5) == 105, 'step 15 put')
    call check(i5(1) == 9 .and. i5(5) == 13, 'step 15 get')
  end if
  call MPI_Win_free(win, ierr)
  ! 16
  io = [(1000 * rank + i, i = 1, 25)]
  back = 0
  call MPI_File_open(MPI_COMM_WORLD, trim(dir)//'/fortran_io.dat', &
                     MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS, 'step 16 open')
  offset = 100 * rank
  call MPI_File_write_at(fh, offset, io, 25, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call MPI_File_read_at(fh, offset, back, 25, MPI_INTEGER, status, ierr)
  call check(all(back == io), 'step 16 data')
  call MPI_File_close(fh, ierr)
  ! 17
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      write(0, '(A,I0,A,A)') 'rank ', rank, ': failed: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check

end program fortran_mpi
